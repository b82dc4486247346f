"""Nothing lost (issue 17): odd text is stored, one unstorable run takes no other with it, and a suite run with
runs the store could not take is `incomplete`, resumable, and reported as such."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from niceeval._core.events import MessageEvent
from niceeval._core.results import RunResult
from niceeval._run.storing import plan_resume
from niceeval.cli._views import report_run, runs_table
from niceeval.store import Store, StoreError, SuiteRunStart
from niceeval.store._recorder import StoreSink

from .test_sink import recorder_of, sink_of, summary_of
from .test_store import planned, recording, result


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url) as opened:
        yield opened


def odd(eval_id: str) -> RunResult:
    """A run whose agent answered a lone surrogate (an http_agent answering `"\\ud83d"`)."""
    return result(eval_id, "failed", score=0.0).model_copy(
        update={"events": [MessageEvent(role="assistant", text="bad \ud83d reply", seq=0)]}
    )


def test_a_lone_surrogate_is_stored_as_the_json_report_has_it_and_takes_no_run_with_it(store: Store) -> None:
    sink = sink_of(store, SuiteRunStart(id="s1"))
    for run in (result("a"), odd("b"), result("c")):  # queued before the writer starts: one batch
        sink.run_finished(run)
    sink.start(planned("a", "b", "c"), [])
    sink.finish(summary_of(["a", "b", "c"]))
    sink.settle()
    assert (sink.unstored, sink.error) == (0, None)
    info = store.run("s1").run
    assert (info.status, info.runs_done, info.passed, info.failed) == ("finished", 3, 2, 1)
    assert store.eval_run("s1", "b").events[0].text == "bad \ufffd reply"  # type: ignore[union-attr]


def incomplete_suite(store: Store) -> StoreSink:
    """A suite run of a, b, c whose batch holds a second copy of a's run, which the store refuses."""
    warnings = io.StringIO()
    sink = sink_of(store, SuiteRunStart(id="s1"), warnings=warnings)
    twin = result("a", "failed", score=0.0)
    for run in (result("a"), twin, result("b")):  # c never arrives: the suite is resumable for it as well
        sink.run_finished(run)
    sink.start(planned("a", "b", "c"), [])
    sink.finish(summary_of(["a", "b", "c"]))
    sink.settle()
    return sink


def test_one_refused_run_is_isolated_and_the_first_stored_copy_wins(store: Store) -> None:
    sink = incomplete_suite(store)
    assert sink.unstored == 1 and sink.error is not None and "first unstored: a run 1" in sink.error
    assert store.outcomes("s1") == {("a", 0): "passed", ("b", 0): "passed"}


def test_a_suite_run_with_unstored_runs_is_incomplete_and_resumable(store: Store) -> None:
    incomplete_suite(store)
    assert store.run("s1").run.status == "incomplete"
    plan = plan_resume(recorder_of(store), SuiteRunStart(id="new"), [], None, None)  # the latest unfinished one
    assert plan.sink.run_id == "s1" and plan.done == {("a", 0), ("b", 0)}
    assert "incomplete (2/3 runs)" in runs_table(store.runs())[1]


def test_report_of_an_incomplete_suite_run_says_what_is_missing_and_exits_1(store: Store) -> None:
    incomplete_suite(store)
    out = io.StringIO()
    code = report_run(store, "s1", Console(file=out, width=200))
    assert code == 1
    text = out.getvalue()
    assert "incomplete · 1 of 3 eval runs missing (`niceeval run --resume s1` runs them)" in text
    assert "2 of 3 eval runs stored" in text


def test_every_report_file_of_an_incomplete_suite_run_states_the_missing_runs(store: Store, tmp_path: Path) -> None:
    import json

    incomplete_suite(store)
    files = {"json": tmp_path / "r.json", "junit": tmp_path / "r.xml", "html": tmp_path / "r.html"}
    code = report_run(
        store, "s1", Console(file=io.StringIO()), json_path=files["json"], junit_path=files["junit"],
        html_path=files["html"],
    )  # fmt: skip
    assert code == 1
    assert json.loads(files["json"].read_text(encoding="utf-8"))["missing_runs"] == 1
    assert '<property name="missing_runs" value="1" />' in files["junit"].read_text(encoding="utf-8")
    html = files["html"].read_text(encoding="utf-8")
    assert "Incomplete: 1 planned eval run missing from the store" in html


def test_the_store_password_in_the_command_line_is_never_stored(store: Store, tmp_path: Path) -> None:
    from niceeval._run.storing import suite_start

    command = ["niceeval", "run", "--store", "postgresql://ci:s3cret-store-pass@db.internal/evals", "--runs", "2"]
    start = suite_start(tmp_path, None, strict=False, min_pass_rate=1.0, command=command)
    assert start.command[3] == "postgresql://ci:[redacted]@db.internal/evals"
    with recording(store) as recorder:
        recorder.begin(start, planned("a"))
    assert "s3cret-store-pass" not in str(store.run(start.id).run.command)


HOLDER = """
import sys
from niceeval.store._recorder import Recorder

recorder = Recorder.open(sys.argv[1], __import__("pathlib").Path.cwd())
lease = recorder.lease(sys.argv[2])
print("held", flush=True)
sys.stdin.read()  # until the test closes it
"""


def test_a_second_resume_of_a_run_being_written_refuses_and_goes_once_the_writer_is_gone(
    store: Store, store_url: str
) -> None:
    incomplete_suite(store)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, store_url, "s1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(StoreError, match="suite run s1 is being written by another niceeval process right now"):
            plan_resume(recorder_of(store), SuiteRunStart(id="new"), [], None, "s1")
    finally:
        holder.communicate(timeout=30)  # a killed writer frees the lease the same way
    plan = plan_resume(recorder_of(store), SuiteRunStart(id="new"), [], None, "s1")
    other = subprocess.run(  # now this process is the writer: another is refused
        [sys.executable, "-c", HOLDER, store_url, "s1"], capture_output=True, text=True, timeout=30
    )
    assert other.returncode == 1 and "being written by another niceeval process" in other.stderr
    plan.sink.start(planned("a", "b", "c"), [])
    plan.sink.run_finished(result("c"))
    plan.sink.finish(summary_of(["a", "b", "c"]))
    plan.sink.settle()
    assert (store.run("s1").run.status, store.run("s1").run.runs_done) == ("finished", 3)


def test_runs_shows_a_suite_run_left_running_by_a_writer_that_is_gone_as_interrupted(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    """A suite run whose writer died before it could record its end (killed, or its store full) says `running`
    forever; `niceeval runs` tells it from one still being written by its lease, free once its writer is gone."""
    with recording(store) as recorder:
        for run_id in ("gone", "live"):
            recorder.begin(SuiteRunStart(id=run_id), planned("a", "b"))
            recorder.add(run_id, [result("a")])
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, store_url, "live"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        listed = subprocess.run(
            [sys.executable, "-m", "niceeval.cli", "runs", "--store", store_url],
            cwd=tmp_path, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        holder.communicate(timeout=30)
    assert listed.returncode == 0, listed.stderr
    lines = {line.split()[0]: line for line in listed.stdout.splitlines()[1:]}
    assert lines["gone"].endswith("interrupted (1/2 runs)")
    assert lines["live"].endswith("running (1/2 runs)")
    assert store.run("gone").run.status == "running"  # what is stored stays: `--resume` completes it
