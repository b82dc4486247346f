"""A watch session's record: one suite run of kind `online` per session and UTC day, each closed at the turn."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import anyio

from niceeval._run.execute import ExecOptions
from niceeval.online._score import score
from niceeval.online._stored import OnlineRecord
from niceeval.store import Store, SuiteRunStart
from niceeval.store._recorder import Recorder
from tests.online.online_helpers import online_evals
from tests.online.test_online_evals import genai_trace

SOURCE = "from niceeval import define_eval\n\n@define_eval(online=True)\ndef seen(t): pass\n"


def test_the_day_turning_closes_one_suite_run_and_begins_the_next(tmp_path: Path) -> None:
    (entry,) = online_evals(tmp_path, SOURCE)
    result = anyio.run(score, entry, genai_trace(), ExecOptions(timeout=10, root=tmp_path), 0)
    days = iter([date(2026, 11, 27), date(2026, 11, 27), date(2026, 11, 28)])
    recorder = Recorder.open(str(tmp_path / "results.db"), tmp_path)
    start = SuiteRunStart(id="x", command=["niceeval", "watch"], root=str(tmp_path))
    record = OnlineRecord(recorder, start, [entry], today=lambda: next(days), clock=lambda: 0.0)
    record.add([result])
    record.add([result, result])
    record.add([result])
    record.close()
    recorder.close()
    store = Store.open(str(tmp_path / "results.db"))
    try:
        runs = {run.id: run for run in store.runs()}
        first, second = record.suite_run_ids
        assert {runs[first].kind, runs[second].kind} == {"online"}
        assert {runs[first].status, runs[second].status} == {"finished"}
        assert [r.run_index for r in store.results(first)] == [0, 1, 2]
        assert [(r.run_index, r.case_id) for r in store.results(second)] == [(0, "a" * 32)]
        assert store.run(first).eval_runs[0].eval_id == entry.id
    finally:
        store.close()
