"""`Store.stored_runs`: each eval run's JSON report record made from its rows is the bytes `run_json` writes for its
full record, and its light `RunResult` is that record without judge calls, spans and untimed events (SQLite and
PostgreSQL)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console

from niceeval import AssertionResult, RunResult
from niceeval._core.errors import ErrorInfo
from niceeval._core.events import ErrorEvent, MessageEvent, UsageEvent
from niceeval._core.results import SandboxRecord, Spend
from niceeval._core.spans import SpanRecord
from niceeval._core.summary import PlannedEval
from niceeval.attacks import RESISTED
from niceeval.report.json_report import run_json
from niceeval.store import Store, SuiteRunStart
from niceeval.store._recorder import SuiteEnd

from .test_store import full_result, planned, record, recording, result


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url) as opened:
        yield opened


def _timed() -> RunResult:
    """Three runs' worth of odd records: a timed reply, an event stamped on a whole second, spans, a sandbox."""
    at = datetime(2026, 11, 28, 3, 44, 33, tzinfo=UTC)
    return RunResult(
        eval_id="evals/a.py::chat",
        file="evals/a.py",
        line=20,
        outcome="passed",
        duration_s=2.0,
        assertions=[
            AssertionResult(
                name="judge: kind",
                severity="soft",
                score=None,
                threshold=0.5,
                state="inconclusive",
                reason="no OPENAI_API_KEY",
                cause="no_api_key",
                unstable=True,
                key="k1",
            ),
        ],  # fmt: skip
        events=[
            MessageEvent(role="user", text="hi é \u2028", seq=0, at=at),
            MessageEvent(role="assistant", text="hello", latency=1.25, first_token=0.5, seq=1, at=at),
            ErrorEvent(message="retry", seq=2),
            UsageEvent(model="m", input_tokens=1, output_tokens=2, billed_to="judge", seq=3),
        ],
        spans=[SpanRecord(trace_id="t" * 32, span_id="s" * 16, name="agent", attributes={"n": 1, "x": [1.5, "y"]})],
        sandbox=SandboxRecord(kind="docker", container="abc123", attempts=[0], image="img", image_size_bytes=10),
        sandbox_path="/tmp/keep",
        workspace_diff="--- a\n+++ b\n",
        warnings=["blocked the event loop for 1.2s"],
        agent_spend=Spend(calls=2, tokens=30, cost=None, unpriced=["m"]),
    )


def _mixed() -> list[RunResult]:
    """Mixed outcomes, points, a variant, an attack verdict, three runs of one eval, a lone surrogate."""
    scored = result("evals/a.py::vague", "scored", score=0.5).model_copy(update={"run_index": 0})
    points = RunResult(
        eval_id="evals/a.py::graded", file="evals/a.py", line=30, outcome="scored", duration_s=0.5, points=2.0,
        points_possible=3.0,
        assertions=[AssertionResult(name="step 2", severity="soft", score=0.0, threshold=1.0, state="failed",
                                    points=1.0)],
    )  # fmt: skip
    attack = RunResult(
        eval_id="evals/a.py::attacked[data_exfiltration-file-1]", file="evals/a.py", line=40, outcome="failed",
        duration_s=0.75, case_id="data_exfiltration-file-1", variant={"prompt": "short"}, failure="agent",
        assertions=[AssertionResult(name=RESISTED, severity="gate", score=0.0, threshold=1.0, state="failed",
                                    reason="sent the canary")],
    )  # fmt: skip
    skipped = RunResult(eval_id="evals/a.py::later", file="evals/a.py", line=50, outcome="skipped", duration_s=0.0,
                        skip_reason="needs docker")  # fmt: skip
    infra = RunResult(
        eval_id="evals/a.py::flaky", file="evals/a.py", line=60, outcome="failed", duration_s=0.1, failure="infra",
        attempts=3, error=ErrorInfo(type="APIConnectionError", message="down \ud83d", kind="exception"),
    )  # fmt: skip
    runs = [result("evals/a.py::repeated", run_index=i, score=1.0 if i != 1 else 0.0) for i in range(3)]
    return [full_result(), _timed(), scored, points, attack, skipped, infra, *runs]


def _plan(runs: list[RunResult]) -> list[PlannedEval]:
    ids = list(dict.fromkeys(r.eval_id for r in runs))
    return [PlannedEval(id=i, file="evals/a.py", line=n, runs=3) for n, i in enumerate(ids)]


def _light(full: RunResult) -> RunResult:
    """What `stored_runs` hands the reporters for a run whose full record is `full`."""
    assertions = [a.model_copy(update={"judge_calls": []}) for a in full.assertions]
    timed = [e for e in full.events if isinstance(e, MessageEvent) and e.latency is not None]
    return full.model_copy(update={"assertions": assertions, "events": timed, "spans": []})


def test_each_record_is_the_bytes_run_json_writes_for_the_full_record(store: Store) -> None:
    runs = _mixed()
    record(store, "s1", runs, plan=_plan(runs))
    full = list(store.results("s1"))
    stored = list(store.stored_runs("s1"))
    assert [s.json for s in stored] == [run_json(r) for r in full]
    assert [s.result for s in stored] == [_light(r) for r in full]
    assert len(stored) == len(runs) == 10


def test_the_light_run_keeps_what_tallies_read(store: Store) -> None:
    record(store, "s1", [_timed()])
    (stored,) = store.stored_runs("s1")
    assert [e.latency for e in stored.result.events] == [1.25]  # the turn's p50 and p95
    assert [(a.state, a.unstable, a.judge_calls) for a in stored.result.assertions] == [("inconclusive", True, [])]
    assert stored.result.agent_spend == Spend(calls=2, tokens=30, cost=None, unpriced=["m"])
    assert stored.json is not None and b'"at":"2026-11-28T03:44:33Z"' in stored.json  # no fraction: as pydantic


def test_batches_and_another_suite_run_written_between_them_change_nothing(store: Store) -> None:
    runs = _mixed()
    with recording(store) as recorder:
        recorder.begin(SuiteRunStart(id="s1", command=["niceeval", "run"]), _plan(runs))
        recorder.begin(SuiteRunStart(id="s2", command=["niceeval", "run"]), _plan(runs))
        for run in runs:  # one run at a time into each: their ids interleave
            recorder.add("s1", [run])
            recorder.add("s2", [run.model_copy(update={"duration_s": 9.0})])
        for suite in ("s1", "s2"):
            recorder.finish(suite, SuiteEnd(status="finished", exit_code=1, duration_s=1.0))
    whole = [s.json for s in store.stored_runs("s1")]
    assert whole == [run_json(r) for r in store.results("s1")]
    with store.engine.connect() as conn:
        from niceeval.store._report_rows import stored_runs

        assert [s.json for s in stored_runs(conn, "s1", batch=2)] == whole
    assert {s.result.duration_s for s in store.stored_runs("s2")} == {9.0}


def test_a_carried_slot_is_read_in_full_from_the_run_that_made_it(store: Store) -> None:
    made = full_result()
    record(store, "s0", [made], plan=planned(made.eval_id, runs=2))
    carried = made.model_copy(update={"provenance": "carried", "carried_from": "s0", "carried_index": 1})
    record(store, "s1", [carried, result("evals/a.py::fresh")], plan=planned(made.eval_id, "evals/a.py::fresh"))
    first, fresh = store.stored_runs("s1")
    assert first.json is None and first.result == store.eval_run("s1", made.eval_id, 1)
    assert first.result.events == made.events  # its whole record: the report writes it with `run_json`
    assert fresh.json == run_json(store.eval_run("s1", "evals/a.py::fresh"))


def test_a_suite_run_without_eval_runs_reads_none(store: Store) -> None:
    with recording(store) as recorder:
        recorder.begin(SuiteRunStart(id="s1", command=["niceeval", "run"]), planned("a"))
        recorder.finish("s1", SuiteEnd(status="interrupted", exit_code=130, duration_s=0.1))
    assert list(store.stored_runs("s1")) == []


def test_report_prints_the_first_evals_then_failures_and_counts_the_rest(store: Store) -> None:
    from niceeval.cli._views import REPORT_MOST_EVALS, report_run

    ids = [f"evals/a.py::e{n:03d}" for n in range(REPORT_MOST_EVALS + 5)]
    runs = [result(i, "failed" if n % 100 == 99 else "passed", score=0.0 if n % 100 == 99 else 1.0)
            for n, i in enumerate(ids)]  # fmt: skip
    record(store, "s1", runs)
    out = io.StringIO()
    assert report_run(store, "s1", Console(file=out, width=200)) == 1
    text = out.getvalue()
    assert " FAIL   evals/a.py::e099" in text and " FAIL   evals/a.py::e199" in text
    assert " PASS   evals/a.py::e198" in text and "evals/a.py::e200" not in text
    assert "... 5 more evals not shown (5 passed)" in text
    assert "203 passed, 0 scored, 2 failed, 0 skipped (205 evals, 205 runs)" in text


def test_an_interrupted_run_reports_its_done_evals_as_they_finished_then_the_rest_in_plan_order(
    store: Store, tmp_path: Path
) -> None:
    from niceeval.cli._views import ReportFiles, _report_stored

    runs = [  # c is done first, then a; b has one of its two runs; d never started
        result("c", "failed", run_index=1, score=0.0),
        result("a", run_index=0),
        result("b", run_index=1),
        result("c", run_index=0),
        result("a", run_index=1),
    ]
    with recording(store) as recorder:
        recorder.begin(SuiteRunStart(id="s1", command=["niceeval", "run"]), planned("a", "b", "c", "d", runs=2))
        recorder.add("s1", runs)
        recorder.finish("s1", SuiteEnd(status="interrupted", exit_code=130, duration_s=1.0))
    path = tmp_path / "report.json"
    summary = _report_stored(store, store.info("s1"), [], ReportFiles(json=path))
    assert [(t.eval.id, t.done) for t in summary.unfinished] == [("b", 1), ("d", 0)]
    assert summary.eval_counts() == {"passed": 2, "scored": 0, "failed": 1, "skipped": 0}  # b by its one run
    assert (summary.runs_done, summary.evals, summary.missing_runs) == (5, 4, 3)
    doc = json.loads(path.read_text())
    assert [(e["id"], e["status"], [r["run_index"] for r in e["runs"]]) for e in doc["evals"]] == [
        ("c", "failed", [0, 1]),
        ("a", "passed", [0, 1]),
        ("b", "passed", [1]),
        ("d", None, []),
    ]
    assert doc["summary"]["runs"] == 5 and doc["missing_runs"] == 3 and doc["interrupted"] is True


def test_the_plan_reads_back_its_tags_clusters_and_runs_in_order(store: Store) -> None:
    plan = [
        PlannedEval(id="evals/a.py::b", file="evals/a.py", line=9, tags=("slow", "é \u2028"), runs=3, cluster="c1"),
        PlannedEval(id="evals/a.py::a", file="evals/a.py", line=2),
        PlannedEval(id="evals/b.py::c[x]", file="evals/b.py", line=4, tags=("[]",), cluster="c1"),
    ]
    record(store, "tagged", [result("evals/a.py::a")], plan=plan)
    assert store.planned("tagged") == plan


def test_each_stored_run_carries_its_planned_eval_and_the_plan_is_walked_in_order(store: Store) -> None:
    plan = [
        PlannedEval(id="evals/a.py::b", file="evals/a.py", line=9, tags=("slow", "é \u2028"), runs=2, cluster="c1"),
        PlannedEval(id="evals/a.py::a", file="evals/a.py", line=2),
    ]
    runs = [result("evals/a.py::a"), result("evals/a.py::b", run_index=1), result("evals/a.py::b")]
    record(store, "s1", runs, plan=plan)
    assert [(s.result.eval_id, s.planned, s.position) for s in store.stored_runs("s1")] == [
        ("evals/a.py::a", plan[1], 1),
        ("evals/a.py::b", plan[0], 0),
        ("evals/a.py::b", plan[0], 0),
    ]
    assert [s.planned for s in store.stored_runs("s1", records=False)] == [plan[1], plan[0], plan[0]]
    assert list(store.walk_planned("s1")) == plan == store.planned("s1")
    assert store.planned_count("s1") == 2
    walk = store.walk_planned("s1")
    assert next(walk) == plan[0]  # one record at a time: a walk left part-way lets its connection go
    walk.close()
    assert list(store.walk_planned("s1")) == plan


def test_a_run_the_plan_does_not_name_is_read_without_a_planned_eval_and_left_out_of_the_report(
    store: Store, tmp_path: Path
) -> None:
    from niceeval.cli._views import ReportFiles, _report_stored

    record(store, "s1", [result("evals/a.py::a"), result("evals/a.py::stray")], plan=planned("evals/a.py::a"))
    assert [(s.planned is None, s.position) for s in store.stored_runs("s1")] == [(False, 0), (True, None)]
    path = tmp_path / "report.json"
    summary = _report_stored(store, store.info("s1"), [], ReportFiles(json=path))
    assert [e["id"] for e in json.loads(path.read_text())["evals"]] == ["evals/a.py::a"]
    assert (summary.evals, summary.runs_done) == (1, 1)


def test_judge_messages_stored_with_spaces_are_written_as_pydantic_writes_them(store: Store) -> None:
    """A judge call's messages are spliced into the record as stored; text another encoder wrote (spaces after the
    separators, as `json.dumps` writes) is encoded again, so the record stays `run_json`'s bytes."""
    record(store, "s1", [full_result()], plan=planned(full_result().eval_id, runs=2))
    (compact,) = store.stored_runs("s1")
    with store.engine.begin() as conn:
        from niceeval.store._driver import session_of

        session = session_of(conn)
        rows = session.execute("SELECT id, messages FROM judge_calls").fetchall()
        cast = "::json" if session.dialect.kind == "postgresql" else ""
        written = []
        for call_id, messages in rows:
            spaced = json.dumps(messages if isinstance(messages, list) else json.loads(messages))
            session.execute(f"UPDATE judge_calls SET messages = ?{cast} WHERE id = ?", (spaced, call_id))
            written.append(spaced)
    assert sorted(written) == ["[]", '[{"role": "user", "content": "Judge: k."}]']
    (respaced,) = store.stored_runs("s1")
    assert respaced.json == compact.json == run_json(store.eval_run("s1", full_result().eval_id, 1))


def test_the_clusters_evals_share_are_counted_by_the_database_as_from_the_plan(store: Store) -> None:
    from niceeval.cli._views import shared_clusters

    plan = [
        PlannedEval(id="evals/a.py::v1", file="evals/a.py", line=1, cluster="case-1"),
        PlannedEval(id="evals/a.py::v2", file="evals/a.py", line=2, cluster="case-1"),
        PlannedEval(id="evals/a.py::own", file="evals/a.py", line=3, cluster="evals/a.py::own"),
        PlannedEval(id="evals/a.py::alone", file="evals/a.py", line=4),
        PlannedEval(id="evals/a.py::keyed", file="evals/a.py", line=5, cluster="k"),
    ]
    record(store, "s1", [result("evals/a.py::v1")], plan=plan)
    assert store.shared_clusters("s1") == shared_clusters(plan) == {"case-1": 2, "k": 1}


def test_a_run_stored_after_its_eval_was_done_is_left_out_as_before(store: Store, tmp_path: Path) -> None:
    from niceeval.cli._views import ReportFiles, _report_stored

    runs = [result("a"), result("b", "failed", score=0.0), result("a", "failed", run_index=1, score=0.0)]
    record(store, "s1", runs, plan=planned("a", "b"))  # a plans one run: its second came after it was done
    path = tmp_path / "report.json"
    summary = _report_stored(store, store.info("s1"), [], ReportFiles(json=path))
    doc = json.loads(path.read_text())
    assert [(e["id"], e["status"], [r["run_index"] for r in e["runs"]]) for e in doc["evals"]] == [
        ("a", "passed", [0]),
        ("b", "failed", [0]),
    ]
    assert (summary.runs_done, summary.unfinished, summary.eval_counts()["passed"]) == (2, [], 1)
