"""PostgreSQL's batch writer: in a suite on an event loop, the loop writes each batch over a connection of its own.

The loop's writes go over psycopg's `AsyncConnection`, each batch one transaction (its ids in one query, a `COPY`
per table, the commit), awaited while the loop runs the suite: written by a thread instead, each of psycopg's calls
into libpq let go of the interpreter and took it back from the event loop. The writer thread paces them: once the
oldest pending run has waited `GATHER_S`, it has the loop write the pending runs (`anyio.from_thread.run`), which
turns them into their rows there. It writes what the loop could not itself (a batch that failed or was cancelled
goes to it whole, and from then on every batch does), and it closes the suite run. `flush`, on the loop before the
end, writes the last runs there and closes the loop's connection. Outside an event loop (a pytest session's hooks,
a script) the thread writes every batch, the rows built as each run finishes (the thread's Python work would
otherwise be the loop's wait).
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from niceeval.store import _batches
from niceeval.store._batches import Closing, Finished, Pending, Unstored, rows_of, write_batches
from niceeval.store._connection import WriteConnection
from niceeval.store._driver import Target, ids_query, postgresql_options, sequences_query
from niceeval.store._statements import RunRows, copy_statement, id_counts, run_tables

if TYPE_CHECKING:
    from psycopg import AsyncConnection


class PostgresqlBatches:
    """Writes a suite run's finished runs into a PostgreSQL store (see the module's docstring)."""

    def __init__(self, connection: WriteConnection, suite_run_id: str, unstored: Unstored) -> None:
        self._connection = connection
        self._suite_run_id = suite_run_id
        self._unstored = unstored
        self._pending = Pending()
        self._token = _loop_token()
        self._on_loop = _LoopConnection(connection.target) if self._token is not None else None
        """What the loop writes through (None outside a loop, and once a batch failed there or `flush` ran)."""
        self._turn = threading.Lock()
        """Held by the writer thread while the loop writes a batch for it, and by `flush`: one writes at a time."""
        self._given_back: queue.SimpleQueue[list[RunRows]] = queue.SimpleQueue()
        """Batches the loop failed to write, whole, for the thread."""
        self._end: queue.SimpleQueue[Closing] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="niceeval-store-writer", daemon=True)
        self._thread.start()

    def add(self, run: Finished) -> None:
        """Take a finished run: as it is when the loop writes it (it turns the batch into rows), else as its rows."""
        if self._on_loop is not None:
            self._pending.add(run)
            return
        for rows in rows_of([run], self._connection.dialect, self._unstored):
            self._pending.add(rows)

    async def flush(self) -> None:
        """On the loop before `close`: the loop's write under way ends, the loop writes the runs still pending,
        then closes its connection (the thread writes anything it failed to, and closes the suite run)."""
        if self._on_loop is None:
            return
        if not self._turn.acquire(blocking=False):
            await anyio.to_thread.run_sync(self._turn.acquire)  # the write under way, for the thread, ends first
        try:
            on_loop, self._on_loop = self._on_loop, None
            if on_loop is None:
                return
            with contextlib.suppress(Exception):  # given back: the thread writes it
                await self._write_on_loop(on_loop)
            with contextlib.suppress(Exception):
                await on_loop.aclose()
        finally:
            self._turn.release()

    def close(self, closing: Closing) -> None:
        """The writer thread writes what is left and closes the suite run."""
        self._end.put(closing)

    def join(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        while True:
            try:
                closing = self._end.get(timeout=_batches.GATHER_S)
            except queue.Empty:
                closing = None
            if closing is not None:
                self._close(closing)
                return
            if self._on_loop is not None and self._pending.waited() >= _batches.GATHER_S:
                self._write_by_loop()
            elif self._on_loop is None:
                self._write(self._pending.take())
            self._write_given_back()

    def _write_by_loop(self) -> None:
        """Have the event loop write the pending runs; a batch it fails to write (or the loop gone) makes the
        thread the writer from then on."""
        with self._turn:
            on_loop = self._on_loop
            if on_loop is None:  # `flush` took it
                return
            try:
                anyio.from_thread.run(self._write_on_loop, on_loop, token=self._token)
            except BaseException:  # failed, cancelled as the loop ended (asyncio's `CancelledError`), or gone
                self._on_loop = None
                on_loop.close_now()

    async def _write_on_loop(self, on_loop: _LoopConnection) -> None:
        """On the loop: the pending runs as rows, written in transactions of up to `BATCH`. A batch that fails (or
        is cancelled) is given back whole to the thread, with every one after it."""
        batch = rows_of(self._pending.take(), self._connection.dialect, self._unstored)
        for first in range(0, len(batch), _batches.BATCH):
            try:
                await on_loop.add(self._suite_run_id, batch[first : first + _batches.BATCH])
            except BaseException:
                self._given_back.put(batch[first:])
                raise

    def _close(self, closing: Closing) -> None:
        with self._turn:
            on_loop, self._on_loop = self._on_loop, None
        if on_loop is not None:  # `close` without `flush`: the loop writes no more
            on_loop.close_now()
        try:
            self._write_given_back()
            self._write(self._pending.take())
            closing.record()
        finally:
            closing.then()

    def _write_given_back(self) -> None:
        while True:
            try:
                batch = self._given_back.get_nowait()
            except queue.Empty:
                return
            self._write(batch)

    def _write(self, runs: Sequence[RunRows | Finished]) -> None:
        rows = rows_of(runs, self._connection.dialect, self._unstored)
        write_batches(self._write_batch, rows, self._unstored)

    def _write_batch(self, batch: list[RunRows]) -> bool:
        self._connection.add(self._suite_run_id, batch)
        return True


def _loop_token() -> anyio.lowlevel.EventLoopToken | None:
    """The event loop running in this thread, if any."""
    try:
        return anyio.lowlevel.current_token()
    except RuntimeError:  # none: a pytest session's hooks, a script
        return None


class _LoopConnection:
    """psycopg's `AsyncConnection` to the store, opened on the first batch (one batch at a time: each is awaited)."""

    def __init__(self, target: Target) -> None:
        self._target = target
        self._connection: AsyncConnection[Any] | None = None
        self._sequences: dict[str, str] = {}

    async def add(self, suite_run_id: str, runs: Sequence[RunRows]) -> None:
        """Record finished runs, already turned into their rows, in one transaction; on any failure (or
        cancellation) nothing of them is written and the connection is closed."""
        import psycopg

        connection = self._connection
        if connection is None:
            connection = await psycopg.AsyncConnection.connect(**postgresql_options(self._target))
            self._connection = connection
        try:
            cursor = connection.cursor()
            counts = id_counts(runs)
            wanted = {table: count for table, count in counts.items() if count}
            missing = [table for table in wanted if table not in self._sequences]
            if missing:
                await cursor.execute(*sequences_query(missing))
                self._sequences.update(zip(missing, _one(await cursor.fetchone()), strict=True))
            ids: dict[str, Sequence[int]] = {table: [] for table in counts}
            if wanted:
                await cursor.execute(*ids_query(wanted, self._sequences))
                ids.update(zip(wanted, _one(await cursor.fetchone()), strict=True))
            for columns, rows in run_tables(suite_run_id, runs, ids):
                if rows:
                    async with cursor.copy(copy_statement(columns)) as copy:
                        for row in rows:
                            await copy.write_row(row)
            await connection.commit()
        except BaseException:
            await self.aclose()  # the server rolls back what the closed connection began
            raise

    async def aclose(self) -> None:
        """Close the connection (a later batch opens a new one)."""
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

    def close_now(self) -> None:
        """Close the connection without the loop (no write of it is under way)."""
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.pgconn.finish()  # what `AsyncConnection.close` does, without awaiting


def _one(row: tuple[Any, ...] | None) -> tuple[Any, ...]:
    if row is None:  # pragma: no cover - a SELECT without FROM always returns its row
        raise RuntimeError("the store returned no row")
    return row
