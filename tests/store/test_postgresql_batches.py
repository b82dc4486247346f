"""PostgreSQL's batch writer: a suite running on an event loop has its runs written by that loop over its own
connection, never waiting there; the writer thread paces those writes, takes what the loop could not write (a
dropped connection, a cancelled write) and closes the suite run. Every test runs on the session's real cluster."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from niceeval import RunResult
from niceeval.store import Store, SuiteRunStart, _connection
from niceeval.store._connection import WriteConnection
from niceeval.store._driver import parse_url, postgresql_options
from niceeval.store._recorder import Recorder, StoreSink
from niceeval.store._statements import RunRows

from .test_sink import summary_of
from .test_store import full_result, planned, result


class ThreadWriter(WriteConnection):
    """The run's real connection, noting each batch its thread wrote (the loop writes over a connection of its own)."""

    written: list[tuple[int, int]]

    def add(self, suite_run_id: str, runs: Sequence[RunResult | RunRows]) -> None:
        self.written.append((threading.get_ident(), len(runs)))
        super().add(suite_run_id, runs)


@pytest.fixture
def url(postgres: object) -> str:
    made: str = postgres.database()  # type: ignore[attr-defined]
    Store.open(made).close()  # at this niceeval's schema: the run's writer opens it
    return made


def writer_for(url: str) -> ThreadWriter:
    opened = ThreadWriter.of_driver(parse_url(url))
    opened.written = []
    return opened


def sink_through(writer: ThreadWriter, url: str, start: SuiteRunStart) -> StoreSink:
    """The sink of suite run `start.id`, writing through `writer` as the runner's would."""
    return Recorder(writer, url=url).sink(start)


def admin(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(**postgresql_options(parse_url(url)), autocommit=True)


def stored(url: str, run_id: str) -> set[str]:
    with admin(url) as conn:
        rows = conn.execute("SELECT eval_id FROM eval_runs WHERE suite_run_id = %s", (run_id,)).fetchall()
    return {row[0] for row in rows}


def backends(url: str) -> list[int]:
    """The other connections to the store's database, oldest first."""
    with admin(url) as conn:
        query = (
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "ORDER BY backend_start"
        )
        return [row[0] for row in conn.execute(query).fetchall()]


def drop(url: str, pid: int) -> None:
    """The server ends connection `pid` (what a restart, a proxy or an idle timeout does)."""
    with admin(url) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (pid,))


def on_a_loop(body: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(body())


async def until(check: Callable[[], bool]) -> None:
    for _ in range(500):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("never happened")


def ids(*names: str) -> list[str]:
    return list(names)


def test_a_suites_runs_are_written_by_its_loop_batch_by_batch_and_read_back_whole(url: str, tmp_path: Path) -> None:
    writer = writer_for(url)
    sink = sink_through(writer, url, SuiteRunStart(id="s1"))
    names = ids("a", "b", "c", "d", "e", "f")
    full = full_result().model_copy(update={"eval_id": "f"})
    connections: list[int] = []

    async def suite() -> None:
        sink.start(planned(*names), [])
        for name in names[:3]:
            sink.run_finished(result(name))
        await until(lambda: stored(url, "s1") == {"a", "b", "c"})  # a quarter second later, before the end
        connections.append(len(backends(url)))  # the writer's, the lease's, the loop's
        for name in names[3:5]:
            sink.run_finished(result(name))
        sink.run_finished(full)
        await sink.drain()  # the last runs, written by the loop before it lets go of its connection
        assert stored(url, "s1") == set(names)
        connections.append(len(backends(url)))
        sink.finish(summary_of(names))

    on_a_loop(suite)
    sink.settle()
    assert (sink.unstored, sink.error) == (0, None)
    assert writer.written == []  # the thread wrote no batch
    assert connections == [3, 2]
    sink.close()
    with Store.open(url) as store:
        info = store.run("s1").run
        assert (info.status, info.runs_done, info.passed) == ("finished", 6, 5)
        back = store.eval_run("s1", "f", 1)
    assert back is not None
    assert [a.model_dump() for a in back.assertions] == [a.model_dump() for a in full.assertions]
    assert [e.model_dump() for e in back.events] == [e.model_dump() for e in full.events]


def test_a_run_is_stamped_when_it_finishes_not_when_the_loop_writes_its_batch(url: str, tmp_path: Path) -> None:
    writer = writer_for(url)
    sink = sink_through(writer, url, SuiteRunStart(id="s1"))
    moments: list[datetime] = []

    async def suite() -> None:
        sink.start(planned("a"), [])
        moments.append(datetime.now(UTC))
        sink.run_finished(result("a"))
        moments.append(datetime.now(UTC))
        await until(lambda: stored(url, "s1") == {"a"})
        moments.append(datetime.now(UTC))
        await sink.drain()
        sink.finish(summary_of(["a"]))

    on_a_loop(suite)
    sink.settle()
    sink.close()
    with admin(url) as conn:
        row = conn.execute("SELECT finished_at FROM eval_runs WHERE suite_run_id = 's1'").fetchone()
    assert row is not None
    before, after, written = moments
    assert before <= row[0] <= after and written - after >= timedelta(seconds=0.2)  # its batch, a quarter second on


def test_a_loop_connection_the_server_drops_hands_its_batch_to_the_thread_and_nothing_is_lost(
    url: str, tmp_path: Path
) -> None:
    writer = writer_for(url)
    sink = sink_through(writer, url, SuiteRunStart(id="s1"))
    names = ids("a", "b", "c", "d")

    async def suite() -> None:
        sink.start(planned(*names), [])
        sink.run_finished(result("a"))
        await until(lambda: stored(url, "s1") == {"a"})
        drop(url, backends(url)[-1])  # the loop's connection, the newest
        for name in names[1:]:
            sink.run_finished(result(name))
        await until(lambda: stored(url, "s1") == set(names))  # the thread wrote what the loop failed to
        await sink.drain()
        sink.finish(summary_of(names))

    on_a_loop(suite)
    sink.settle()
    sink.close()
    assert (sink.unstored, sink.error) == (0, None)
    assert [count for _, count in writer.written] == [3]  # one batch: the one the loop could not write
    with Store.open(url) as store:
        assert (store.run("s1").run.status, store.run("s1").run.runs_done) == ("finished", 4)


def test_a_suite_finished_without_drain_while_the_loop_writes_loses_nothing(url: str, tmp_path: Path) -> None:
    """`finish` without `drain` while the loop's write waits on the server, then the loop ends (cancelling that
    write): the thread waits for it, writes what it did not, and closes the suite run."""
    writer = writer_for(url)
    sink = sink_through(writer, url, SuiteRunStart(id="s1"))
    names = [f"e{i}" for i in range(40)]
    locker = admin(url)
    locker.autocommit = False
    locker.execute("LOCK TABLE assertions IN ACCESS EXCLUSIVE MODE")  # the loop's write waits on it

    def waiting() -> bool:
        with admin(url) as conn:
            query = (
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            row = conn.execute(query).fetchone()
        return row is not None and row[0] == 1

    async def suite() -> None:
        sink.start(planned(*names), [])
        for name in names[:20]:
            sink.run_finished(result(name))
        await until(waiting)
        for name in names[20:]:
            sink.run_finished(result(name))
        sink.finish(summary_of(names))

    on_a_loop(suite)
    assert stored(url, "s1") == set()  # the cancelled write's transaction was never committed
    locker.rollback()  # the lock goes: the thread writes
    locker.close()
    sink.settle()
    sink.close()
    assert (sink.unstored, sink.error) == (0, None)
    assert stored(url, "s1") == set(names)
    assert sorted(count for _, count in writer.written) == [20, 20]  # the loop's batch, handed over, and the rest
    with Store.open(url) as store:
        assert store.run("s1").run.status == "finished"
    assert len(backends(url)) == 0  # no connection left open, the loop's included


def test_the_runs_writers_idle_connection_is_tried_and_opened_again_before_it_writes(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The suite's runs went over the loop's connection: the writer's own one, idle since the start, may have been
    dropped meanwhile; the suite run is still closed."""
    monkeypatch.setattr(_connection, "_IDLE_S", 0.0)
    writer = writer_for(url)
    sink = sink_through(writer, url, SuiteRunStart(id="s1"))

    async def suite() -> None:
        sink.start(planned("a"), [])
        sink.run_finished(result("a"))
        await sink.drain()
        drop(url, backends(url)[0])  # the writer's connection (the oldest), idle
        sink.finish(summary_of(["a"]))

    on_a_loop(suite)
    sink.settle()
    sink.close()
    assert (sink.unstored, sink.error) == (0, None)
    with Store.open(url) as store:
        assert store.run("s1").run.status == "finished"
