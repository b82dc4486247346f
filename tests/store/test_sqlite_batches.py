"""SQLite's batch writer: the thread a run finishes on (the event loop) writes the pending runs itself, never
waiting for the store; the writer thread takes what may wait (a locked store), what no later run came to write,
and the write-ahead log's checkpoints."""

from __future__ import annotations

import io
import sqlite3
import threading
import time
from collections.abc import Sequence
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from niceeval import RunResult
from niceeval._core.events import MessageEvent
from niceeval.store import Store, SuiteRunStart, _sqlite_batches
from niceeval.store._connection import WriteConnection
from niceeval.store._driver import parse_url
from niceeval.store._recorder import Recorder, StoreSink, SuiteEnd
from niceeval.store._statements import RunRows

from .test_sink import summary_of
from .test_store import planned, result


class WatchedWriter(WriteConnection):
    """The run's real connection, noting which thread wrote each batch, and how."""

    calls: list[tuple[str, int, str]]

    def add_now(self, suite_run_id: str, runs: Sequence[RunResult | RunRows]) -> bool:
        written = super().add_now(suite_run_id, runs)
        self.calls.append(("now" if written else "busy", threading.get_ident(), suite_run_id))
        return written

    def add(self, suite_run_id: str, runs: Sequence[RunResult | RunRows]) -> None:
        self.calls.append(("waiting", threading.get_ident(), suite_run_id))
        super().add(suite_run_id, runs)

    def end_now(self, suite_run_id: str, runs: Sequence[RunResult | RunRows], end: SuiteEnd) -> bool:
        try:
            ended = super().end_now(suite_run_id, runs, end)
        except Exception:
            self.calls.append(("end failed", threading.get_ident(), suite_run_id))
            raise
        self.calls.append(("ended" if ended else "end busy", threading.get_ident(), suite_run_id))
        return ended

    def finish(self, suite_run_id: str, end: SuiteEnd) -> None:
        self.calls.append(("finish", threading.get_ident(), suite_run_id))
        super().finish(suite_run_id, end)


def watched_writer(tmp_path: Path) -> WatchedWriter:
    url = f"sqlite:///{tmp_path / 'results.db'}"
    Store.open(url).close()  # at this niceeval's schema: the run's writer opens it
    watched = WatchedWriter.of_driver(parse_url(url))
    watched.calls = []
    return watched


def sink_through(writer: WatchedWriter, start: SuiteRunStart, **options: Any) -> StoreSink:
    """The sink of suite run `start.id`, writing through `writer` as the runner's would."""
    return Recorder(writer, url=f"sqlite:///{writer.target.database}").sink(start, **options)


def stored(path: Path, run_id: str) -> set[str]:
    """The eval ids stored for `run_id`, read by another connection (another process would see the same)."""
    with closing(sqlite3.connect(path)) as conn:
        return {row[0] for row in conn.execute("SELECT eval_id FROM eval_runs WHERE suite_run_id = ?", (run_id,))}


def test_a_busy_suites_runs_are_written_by_the_thread_they_finish_on(tmp_path: Path) -> None:
    writer = watched_writer(tmp_path)
    ids = [f"e{i:03d}" for i in range(150)]
    sink = sink_through(writer, SuiteRunStart(id="s1"))
    sink.start(planned(*ids), [])
    for eval_id in ids:  # a run every 5 ms for 0.75 s: a batch falls due about every 50 runs
        sink.run_finished(result(eval_id))
        time.sleep(0.005)
    on_loop = [call for call in writer.calls if call[1] == threading.get_ident()]
    assert on_loop and all(how == "now" for how, _, _ in on_loop)  # written there, never waiting
    written_before_the_end = stored(tmp_path / "results.db", "s1")
    assert len(written_before_the_end) >= 100  # committed as the suite goes, visible to any reader
    sink.finish(summary_of(ids))
    sink.settle()
    sink.close()
    assert stored(tmp_path / "results.db", "s1") == set(ids) and sink.unstored == 0
    with Store.open(f"sqlite:///{tmp_path / 'results.db'}") as store:
        info = store.run("s1").run
        assert (info.status, info.runs_done, info.passed) == ("finished", 150, 150)


def test_a_store_another_process_is_writing_never_holds_up_the_loop(tmp_path: Path) -> None:
    """The loop finds the lock taken, hands its runs to the thread and goes on; the thread waits for the lock
    (up to the driver's 60 s) and writes them. A loop that waited for the lock would sit out 60 s per run."""
    writer = watched_writer(tmp_path)
    ids = [f"e{i:03d}" for i in range(60)]
    sink = sink_through(writer, SuiteRunStart(id="s1"))
    sink.start(planned(*ids), [])
    other = sqlite3.connect(tmp_path / "results.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process writing, for the length of these runs
    try:
        for eval_id in ids:
            sink.run_finished(result(eval_id))
            time.sleep(0.01)
        me = threading.get_ident()
        assert ("busy", me, "s1") in writer.calls and ("now", me, "s1") not in writer.calls
        assert stored(tmp_path / "results.db", "s1") == set()
    finally:
        other.execute("COMMIT")
        other.close()
    sink.finish(summary_of(ids))
    sink.settle()
    sink.close()
    assert stored(tmp_path / "results.db", "s1") == set(ids) and sink.unstored == 0 and sink.error is None
    assert any(how == "waiting" and thread != me for how, thread, _ in writer.calls)


def test_the_last_runs_before_a_pause_are_written_without_a_later_run(tmp_path: Path) -> None:
    writer = watched_writer(tmp_path)
    sink = sink_through(writer, SuiteRunStart(id="s1"))
    sink.start(planned("a", "b"), [])
    sink.run_finished(result("a"))  # then nothing for a while: a slow eval
    deadline = time.monotonic() + 30
    while stored(tmp_path / "results.db", "s1") != {"a"}:
        assert time.monotonic() < deadline, "the pending run was never written"
        time.sleep(0.02)
    sink.run_finished(result("b"))
    sink.finish(summary_of(["a", "b"]))
    sink.settle()
    sink.close()
    assert stored(tmp_path / "results.db", "s1") == {"a", "b"}


def finished_at(path: Path, run_id: str) -> dict[str, datetime]:
    with closing(sqlite3.connect(path)) as conn:
        rows = conn.execute("SELECT eval_id, finished_at FROM eval_runs WHERE suite_run_id = ?", (run_id,))
        return {eval_id: datetime.fromisoformat(at).replace(tzinfo=UTC) for eval_id, at in rows}


def test_a_run_is_stamped_when_it_finishes_not_when_its_batch_is_written(tmp_path: Path) -> None:
    """The loop turns the pending runs into rows when it writes them (rows built together cost less): a run's
    `finished_at` is still the moment it finished, a quarter second or more before."""
    writer = watched_writer(tmp_path)
    sink = sink_through(writer, SuiteRunStart(id="s1"))
    sink.start(planned("a", "b"), [])
    before = datetime.now(UTC)
    sink.run_finished(result("a"))
    after = datetime.now(UTC)
    time.sleep(0.3)  # "b" finds "a" due: it writes both
    sink.run_finished(result("b"))
    assert ("now", threading.get_ident(), "s1") in writer.calls
    written = datetime.now(UTC)
    stamps = finished_at(tmp_path / "results.db", "s1")
    assert stamps.keys() == {"a", "b"}
    assert before <= stamps["a"] <= after < stamps["b"] <= written
    sink.finish(summary_of(["a", "b"]))
    sink.settle()
    sink.close()


def test_a_run_the_store_cannot_take_is_named_and_takes_no_run_of_its_batch_with_it(tmp_path: Path) -> None:
    """Its rows fail to build when its batch is written, on the loop: the other runs of the batch are written,
    and the suite run is `incomplete`, naming it."""
    writer = watched_writer(tmp_path)
    warnings = io.StringIO()
    sink = sink_through(writer, SuiteRunStart(id="s1"), warnings=warnings)
    sink.start(planned("a", "b", "c"), [])
    unbuildable = result("b").model_copy(update={"variant": {"prompt": object()}})  # not JSON: its rows fail
    for run in (result("a"), unbuildable):
        sink.run_finished(run)
    time.sleep(0.3)
    sink.run_finished(result("c"))  # writes the batch, on the loop
    assert ("now", threading.get_ident(), "s1") in writer.calls
    assert stored(tmp_path / "results.db", "s1") == {"a", "c"}
    sink.finish(summary_of(["a", "b", "c"]))
    assert sink.unstored == 1 and sink.error is not None and "first unstored: b run 1" in sink.error
    assert "1 of 3 runs were not stored" in warnings.getvalue()
    sink.close()
    with Store.open(f"sqlite:///{tmp_path / 'results.db'}") as store:
        assert store.run("s1").run.status == "incomplete"


def big_result(eval_id: str) -> RunResult:
    run = result(eval_id)
    return run.model_copy(update={"events": [MessageEvent(role="assistant", text="x" * 3_000_000, seq=0)]})


def test_no_commit_checkpoints_the_log_the_writer_thread_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite's own checkpoint runs in the commit that fills the write-ahead log past 1,000 pages (4 MB), an
    `fsync` the event loop would wait for. The run's writer turns it off; its thread checkpoints every few
    commits instead, so the log still never grows for long."""
    database, log = tmp_path / "results.db", tmp_path / "results.db-wal"
    for every, checkpointed in ((10_000, False), (1, True)):
        monkeypatch.setattr(_sqlite_batches, "_CHECKPOINT_EVERY", every)
        writer = watched_writer(tmp_path)
        empty = database.stat().st_size
        run_id = f"s{every}"
        sink = sink_through(writer, SuiteRunStart(id=run_id))
        sink.start(planned("a", "b", "c"), [])
        for eval_id in ("a", "b"):  # 6 MB in two commits: past SQLite's own checkpoint
            sink.run_finished(big_result(eval_id))
            time.sleep(0.3)
        deadline = time.monotonic() + 30
        while stored(database, run_id) != {"a", "b"} or (checkpointed and database.stat().st_size == empty):
            assert time.monotonic() < deadline, "the runs were never written, or the log never checkpointed"
            time.sleep(0.02)
        assert (database.stat().st_size > empty) == checkpointed
        assert checkpointed or log.stat().st_size > 6_000_000  # all of it in the log
        sink.run_finished(result("c"))
        sink.finish(summary_of(["a", "b", "c"]))
        sink.settle()
        sink.close()  # the last connection's close checkpoints the rest
        assert database.stat().st_size > empty + 6_000_000 and stored(database, run_id) == {"a", "b", "c"}


def suite_run(path: Path, run_id: str) -> tuple[str, int, int, int] | None:
    """The suite run's status and totals, read by another connection (another process would see the same)."""
    with closing(sqlite3.connect(path)) as conn:
        query = "SELECT status, runs_done, passed, failed FROM suite_runs WHERE id = ?"
        found = conn.execute(query, (run_id,)).fetchone()
        return None if found is None else tuple(found)


def test_the_loop_writes_the_last_runs_and_closes_the_suite_run_in_one_transaction(tmp_path: Path) -> None:
    """At the end the loop writes what is pending and the suite run's totals itself (the process then has no
    thread to wait for but its checkpoint): closed before `finish` returns, nothing written by the thread."""
    writer = watched_writer(tmp_path)
    sink = sink_through(writer, SuiteRunStart(id="s1"))
    sink.start(planned("a", "b", "c"), [])
    for eval_id in ("a", "b", "c"):
        sink.run_finished(result(eval_id, "failed" if eval_id == "b" else "passed"))
    assert stored(tmp_path / "results.db", "s1") == set()  # pending: no quarter second has passed
    sink.finish(summary_of(["a", "b", "c"]))
    me = threading.get_ident()
    assert writer.calls == [("ended", me, "s1")]
    assert suite_run(tmp_path / "results.db", "s1") == ("finished", 3, 2, 1)
    sink.settle()
    sink.close()
    assert writer.calls == [("ended", me, "s1")] and sink.unstored == 0 and sink.error is None


def test_a_store_locked_at_the_end_is_closed_by_the_thread(tmp_path: Path) -> None:
    writer = watched_writer(tmp_path)
    sink = sink_through(writer, SuiteRunStart(id="s1"))
    sink.start(planned("a", "b"), [])
    for eval_id in ("a", "b"):
        sink.run_finished(result(eval_id))
    other = sqlite3.connect(tmp_path / "results.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process writing as the suite ends
    try:
        sink.finish(summary_of(["a", "b"]))
        assert ("end busy", threading.get_ident(), "s1") in writer.calls  # the loop did not wait
        time.sleep(0.1)
        assert suite_run(tmp_path / "results.db", "s1") == ("running", 0, 0, 0)
    finally:
        other.execute("COMMIT")
        other.close()
    sink.settle()
    sink.close()
    assert suite_run(tmp_path / "results.db", "s1") == ("finished", 2, 2, 0)
    assert stored(tmp_path / "results.db", "s1") == {"a", "b"} and sink.unstored == 0
    assert [how for how, thread, _ in writer.calls if thread != threading.get_ident()] == ["waiting", "finish"]


def test_a_last_batch_that_fails_on_the_loop_is_written_run_by_run_by_the_thread(tmp_path: Path) -> None:
    """One run of the last batch cannot be inserted (here: the same eval run twice): the loop's transaction is
    rolled back whole, and the thread writes the batch as it writes any, the others kept, the suite run
    `incomplete`."""
    writer = watched_writer(tmp_path)
    warnings = io.StringIO()
    sink = sink_through(writer, SuiteRunStart(id="s1"), warnings=warnings)
    sink.start(planned("a", "b"), [])
    for run in (result("a"), result("b"), result("b")):
        sink.run_finished(run)
    sink.finish(summary_of(["a", "b"]))
    assert ("end failed", threading.get_ident(), "s1") in writer.calls
    assert sink.unstored == 1 and sink.error is not None and "first unstored: b run 1" in sink.error
    sink.close()
    assert stored(tmp_path / "results.db", "s1") == {"a", "b"}
    assert suite_run(tmp_path / "results.db", "s1") == ("incomplete", 2, 2, 0)
    assert "1 of 3 runs were not stored" in warnings.getvalue()
