"""A closing suite run's tallies are folded by SQL (`INSERT ... SELECT ... GROUP BY`) and judged once per distinct
set of counts: they hold what the Python fold of its eval runs (`tally_rows`, the running run's reader) gives, on
SQLite and PostgreSQL, for every kind of run."""

from __future__ import annotations

import uuid

import pytest
from _stored import ErrorInfo, result
from sqlalchemy import select

from niceeval._core.results import RunResult, Spend
from niceeval._core.summary import PlannedEval
from niceeval.store import Store, SuiteRunStart
from niceeval.store._driver import session_of
from niceeval.store._recorder import Recorder, SuiteEnd
from niceeval.store._tallies import TALLY_COLUMNS, tally_rows
from niceeval.store.tables import eval_tallies, suite_tallies


def _runs() -> list[RunResult]:
    crash = ErrorInfo(kind="exception", type="KeyError", message="'id'")
    unpriced = result("evals/b.py::unpriced").model_copy(update={"agent_spend": Spend(calls=1, tokens=9, cost=None)})
    return [
        result("evals/a.py::clean", duration_s=0.5), result("evals/a.py::clean", run_index=1, duration_s=1.5),
        result("evals/a.py::flaky"), result("evals/a.py::flaky", "failed", run_index=1),
        result("evals/a.py::soft", "scored"), result("evals/a.py::soft", run_index=1),
        result("evals/a.py::crash", "failed", error=crash),
        result("evals/a.py::outage", "failed").model_copy(update={"failure": "infra"}),
        result("evals/a.py::half_outage").model_copy(update={"failure": None}),
        result("evals/a.py::half_outage", "failed", run_index=1).model_copy(update={"failure": "infra"}),
        result("evals/a.py::skip", "skipped"),
        result("evals/c.py::varied").model_copy(update={"variant": {"prompt": "short"}}),
        result("evals/c.py::varied", "failed", run_index=1).model_copy(update={"variant": {"prompt": "long"}}),
        unpriced,
    ]  # fmt: skip


@pytest.mark.parametrize(("strict", "min_pass_rate"), [(False, 1.0), (True, 0.5)])
def test_kept_tallies_hold_what_the_python_fold_gives(store_url: str, strict: bool, min_pass_rate: float) -> None:
    results = _runs()
    run_id = uuid.uuid4().hex[:12]
    plan: dict[str, PlannedEval] = {}
    for n, r in enumerate(results):
        tags = ("slow", "billing") if n % 2 else ("support",)
        plan.setdefault(r.eval_id, PlannedEval(id=r.eval_id, file=r.file, line=r.line, runs=2, tags=tags,
                                               cluster="doc" if "a.py" in r.eval_id else None))  # fmt: skip
    plan["evals/d.py::never_ran"] = PlannedEval(id="evals/d.py::never_ran", file="evals/d.py", line=1)
    with Store.open(store_url) as store:
        recorder = Recorder.of(store)
        start = SuiteRunStart(id=run_id, command=["niceeval", "run"], strict=strict, min_pass_rate=min_pass_rate)
        recorder.begin(start, list(plan.values()))
        recorder.add(run_id, results)
        with store.engine.begin() as conn:
            folded, rate = tally_rows(session_of(conn), run_id)  # what the viewer shows while it runs
        recorder.finish(run_id, SuiteEnd(status="finished", exit_code=1, duration_s=1.0))
        recorder.close()
        with store.engine.connect() as conn:
            kept = conn.execute(
                select(*(eval_tallies.c[c] for c in TALLY_COLUMNS[1:]))
                .where(eval_tallies.c.suite_run_id == run_id)
                .order_by(eval_tallies.c.position)
            ).all()
            suite = conn.execute(select(suite_tallies).where(suite_tallies.c.suite_run_id == run_id)).mappings().one()
    assert [tuple(row) for row in kept] == [
        (r.eval_id, r.position, r.file, r.line, r.tags, r.runs, r.passed, r.scored, r.failed, r.skipped, r.passing,
         r.counted, r.pass_rate, pytest.approx(r.duration_s), None if r.cost is None else pytest.approx(r.cost),
         r.verdict, r.rank, r.varied)
        for r in folded
    ]  # fmt: skip
    verdicts = {row.eval_id: row.verdict for row in folded}
    assert verdicts["evals/a.py::outage"] == "failed" and verdicts["evals/a.py::skip"] == "skipped"
    assert verdicts["evals/a.py::soft"] == "scored"  # strict: 1 of 2 meets 0.5; else both count
    assert verdicts["evals/a.py::flaky"] == ("scored" if min_pass_rate == 0.5 else "failed")
    assert next(r for r in folded if r.eval_id == "evals/b.py::unpriced").cost is None
    assert (suite["pass_rate"], suite["low"], suite["high"]) == pytest.approx((rate.value, rate.low, rate.high))
    assert suite["tags"] == ["billing", "slow", "support"]
    assert suite["varied"] == ["evals/c.py::varied"]
