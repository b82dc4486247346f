"""`Store.info` reads a suite run's header alone and `Store.evals_with_case` finds evals by case id prefix: what
`diff` and `report` read instead of every eval run of a large suite run."""

from __future__ import annotations

import uuid

import pytest

from niceeval._core.results import RunResult
from niceeval._core.summary import PlannedEval
from niceeval.store import RunNotFound, Store, SuiteRunStart
from niceeval.store._recorder import Recorder, SuiteEnd


def _result(eval_id: str, case_id: str | None) -> RunResult:
    return RunResult(eval_id=eval_id, file="evals/a.py", line=1, outcome="passed", duration_s=0.1, case_id=case_id)


def test_info_is_the_header_and_cases_are_found_by_a_literal_prefix(store_url: str) -> None:
    results = [_result("evals/a.py::jail", "jailbreak-1"), _result("evals/a.py::odd", "jail_break-2"),
               _result("evals/a.py::pct", "50%-off"), _result("evals/a.py::plain", None)]  # fmt: skip
    run_id = uuid.uuid4().hex[:12]
    with Store.open(store_url) as store:
        recorder = Recorder.of(store)
        recorder.begin(SuiteRunStart(id=run_id, command=["niceeval", "run"]),
                       [PlannedEval(id=r.eval_id, file=r.file, line=r.line) for r in results])  # fmt: skip
        recorder.add(run_id, results)
        running = store.info(run_id[:6])
        recorder.finish(run_id, SuiteEnd(status="finished", exit_code=0, duration_s=1.0))
        recorder.close()
        assert (running.id, running.status, running.runs_done) == (run_id, "running", 4)  # counted so far
        assert store.info(run_id) == store.run(run_id).run
        assert store.evals_with_case(run_id, ["jailbreak-"]) == ["evals/a.py::jail"]  # `_` is no wildcard
        assert store.evals_with_case(run_id, ["jail", "50%"]) == ["evals/a.py::jail", "evals/a.py::odd",
                                                                   "evals/a.py::pct"]  # fmt: skip
        assert store.evals_with_case(run_id, ["%"]) == []
        assert store.evals_with_case(run_id, []) == []
        with pytest.raises(RunNotFound, match="no suite run"):
            store.info("ffffffffffff")
