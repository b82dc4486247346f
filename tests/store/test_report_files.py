"""`niceeval report` and `export` write, from a stored run's rows, the JSON and JUnit bytes the live reporters write
for its full records, whatever text the runs hold (SQLite and PostgreSQL)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from niceeval import AssertionResult, RunResult
from niceeval._core.assertion import JudgeCall
from niceeval._core.errors import ErrorInfo
from niceeval._core.events import MessageEvent
from niceeval._core.results import Spend
from niceeval._core.summary import PlannedEval
from niceeval.cli._views import ReportFiles, _replay, _report_stored, shared_clusters, with_plan
from niceeval.report import JsonReporter, JUnitReporter
from niceeval.store import Store, SuiteRunStart
from niceeval.store._recorder import SuiteEnd

from .test_store import recording

HOSTILE = 'say "hi" & <b>it</b> ]]> \x01\x1b[2J\x7f \r\n\t \u2028\u2029 \U0001f600 \ufeff end'
"""Quotes, markup, a CDATA end, control characters (XML forbids some even escaped), CR/LF/TAB, the JavaScript line
separators, a character outside the BMP and a byte order mark."""
CLOCK = re.compile(rb'"(started|finished)_at": "[^"]+"')


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url) as opened:
        yield opened


def _judged(text: str, score: float) -> AssertionResult:
    call = JudgeCall(model="openai/gpt-x", messages=[{"role": "user", "content": text}], score=score, reason=text)
    return AssertionResult(
        name=f"rubric {text}", severity="soft", score=score, threshold=0.7, state="failed", reason=text,
        expected=text, actual=text, location="evals/a.py:9", judge_calls=[call],
    )  # fmt: skip


def _runs() -> list[RunResult]:
    """Every outcome and JUnit element with hostile text in each place a model's or a user's text can go."""
    base = {"file": "evals/a.py", "line": 3, "duration_s": 0.5}
    said = [MessageEvent(role="assistant", text=f"{n} {HOSTILE}", seq=n) for n in range(12)]  # 10 after 9
    said[1] = MessageEvent(role="assistant", text="ok", latency=0.25, seq=1)
    return [
        RunResult(eval_id=f"evals/a.py::quoted[{HOSTILE}]", outcome="failed", assertions=[_judged(HOSTILE, 0.25)],
                  events=said, warnings=[HOSTILE], agent_spend=Spend(calls=1, tokens=9, cost=0.001), **base),
        RunResult(eval_id="evals/a.py::nan", outcome="scored", assertions=[_judged("odd", math.nan)], **base),
        RunResult(eval_id="evals/a.py::broken", outcome="failed", failure="infra", attempts=3,
                  error=ErrorInfo(type="KeyError", message=HOSTILE, traceback=HOSTILE, location="evals/a.py:4"),
                  **base),
        RunResult(eval_id="evals/a.py::later", outcome="skipped", skip_reason=HOSTILE, **base),
        RunResult(eval_id="evals/a.py::graded", outcome="passed", points=2.0, points_possible=3.0,
                  judge_spend=Spend(calls=2, tokens=40, cost=None, cached=1, unpriced=["m"]), **base),
        RunResult(eval_id="evals/a.py::twice", outcome="passed", **base),
        RunResult(eval_id="evals/a.py::twice", outcome="failed", run_index=1,
                  assertions=[_judged("\U0001f600\x00", 0.0)], **base),
    ]  # fmt: skip


def _recorded(store: Store, *, min_pass_rate: float = 1.0) -> str:
    runs = _runs()
    ids = list(dict.fromkeys(r.eval_id for r in runs))
    plan = [PlannedEval(id=i, file="evals/a.py", line=3, tags=(HOSTILE,), runs=1 + i.endswith("twice")) for i in ids]
    with recording(store) as recorder:
        start = SuiteRunStart(id="s1", command=["niceeval", "run"], min_pass_rate=min_pass_rate)
        recorder.begin(start, plan)
        recorder.add("s1", runs)
        recorder.finish("s1", SuiteEnd(status="finished", exit_code=1, duration_s=1.0))
    return "s1"


def _live(store: Store, run_id: str, folder: Path) -> tuple[bytes, bytes]:
    """The JSON and JUnit reports the live reporters write for the run's full records (what `niceeval run` wrote)."""
    info = store.info(run_id)
    json_path, junit_path = folder / "live.json", folder / "live.xml"
    reporters = [
        JsonReporter(json_path, run_id=info.id),
        JUnitReporter(junit_path, strict=info.strict, min_pass_rate=info.min_pass_rate),
    ]
    plan = store.planned(info.id)
    _replay(with_plan(store.results(info.id), plan), info, plan, reporters, shared=shared_clusters(plan))
    return CLOCK.sub(b"", json_path.read_bytes()), junit_path.read_bytes()


@pytest.mark.parametrize("min_pass_rate", [1.0, 0.5])
def test_report_files_are_the_live_reporters_bytes_for_hostile_text(
    store: Store, tmp_path: Path, min_pass_rate: float
) -> None:
    run_id = _recorded(store, min_pass_rate=min_pass_rate)
    json_path, junit_path = tmp_path / "r.json", tmp_path / "r.xml"
    _report_stored(store, store.info(run_id), [], ReportFiles(json=json_path, junit=junit_path))
    live_json, live_junit = _live(store, run_id, tmp_path)
    assert CLOCK.sub(b"", json_path.read_bytes()) == live_json
    assert junit_path.read_bytes() == live_junit
    assert b"&lt;b&gt;it&lt;/b&gt; ]]&gt; \xef\xbf\xbd\xef\xbf\xbd[2J\x7f" in live_junit  # escaped, then U+FFFD
    assert "\\u2028\\u2029 \\ud83d\\ude00" in live_json.decode()  # the entry's id: ASCII JSON, as `run` writes


def test_a_junit_report_alone_reads_no_json_records_and_writes_the_same_bytes(store: Store, tmp_path: Path) -> None:
    run_id = _recorded(store)
    both, alone = tmp_path / "both.xml", tmp_path / "alone.xml"
    _report_stored(store, store.info(run_id), [], ReportFiles(json=tmp_path / "r.json", junit=both))
    _report_stored(store, store.info(run_id), [], ReportFiles(junit=alone))
    assert alone.read_bytes() == both.read_bytes() == _live(store, run_id, tmp_path)[1]


def test_runs_read_without_records_are_the_runs_read_with_them(store: Store) -> None:
    run_id = _recorded(store)
    with_records = list(store.stored_runs(run_id))
    without = list(store.stored_runs(run_id, records=False))
    assert [s.json for s in without] == [None] * 7 and all(s.json is not None for s in with_records)
    dumped = [s.result.model_dump_json() for s in without]  # as JSON: PostgreSQL keeps the NaN score (NaN != NaN)
    assert dumped == [s.result.model_dump_json() for s in with_records]
    assert [e.latency for e in without[0].result.events] == [0.25]  # the timed reply, for the eval's latency


def test_sqlite_joins_a_runs_events_along_the_primary_key_without_a_sort(tmp_path: Path) -> None:
    """`group_concat` before SQLite 3.44 joins rows in the order they are read: the plan must read them by
    (eval_run_id, seq) and never sort them (a sort by run alone could reorder a run's events). PostgreSQL orders
    inside the aggregate (`string_agg(... ORDER BY seq)`)."""
    from niceeval.store._driver import session_of
    from niceeval.store._report_rows import _queries

    with Store.open(f"sqlite:///{tmp_path / 'results.db'}") as store, store.engine.connect() as conn:
        session = session_of(conn)
        plan = [row[3] for row in session.execute("EXPLAIN QUERY PLAN " + _queries(session).events, (1, 1000))]
    assert plan == ["SEARCH events USING INDEX sqlite_autoindex_events_1 (eval_run_id>? AND eval_run_id<?)"]


def test_a_resumed_run_with_carried_attempts_reports_as_the_live_reporters_wrote_it(
    store: Store, tmp_path: Path
) -> None:
    """A carried attempt is read in full from the run that made it; the replay tallies it with the runs made now."""
    made = _runs()[0].model_copy(update={"eval_id": "evals/a.py::kept", "run_index": 1})
    plan = [PlannedEval(id="evals/a.py::kept", file="evals/a.py", line=3, runs=2),
            PlannedEval(id="evals/a.py::new", file="evals/a.py", line=4)]  # fmt: skip
    carried = made.model_copy(update={"provenance": "carried", "carried_from": "s0", "carried_index": 1})
    fresh = [made.model_copy(update={"run_index": 0}), _runs()[1].model_copy(update={"eval_id": "evals/a.py::new"})]
    with recording(store) as recorder:
        recorder.begin(SuiteRunStart(id="s0", command=["niceeval", "run"]), plan)
        recorder.add("s0", [made])
        recorder.finish("s0", SuiteEnd(status="interrupted", exit_code=130, duration_s=1.0))
        recorder.begin(SuiteRunStart(id="s1", command=["niceeval", "run"]), plan)
        recorder.add("s1", [carried, *fresh])
        recorder.finish("s1", SuiteEnd(status="finished", exit_code=1, duration_s=1.0))
    json_path, junit_path = tmp_path / "r.json", tmp_path / "r.xml"
    summary = _report_stored(store, store.info("s1"), [], ReportFiles(json=json_path, junit=junit_path))
    live_json, live_junit = _live(store, "s1", tmp_path)
    assert CLOCK.sub(b"", json_path.read_bytes()) == live_json
    assert junit_path.read_bytes() == live_junit
    assert (summary.evals, summary.runs_done, summary.unfinished) == (2, 3, [])
    assert b'"provenance":"carried","carried_from":"s0"' in live_json
