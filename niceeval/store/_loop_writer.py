"""PostgreSQL written from the event loop: a suite's batches of runs go over psycopg's `AsyncConnection`, each
batch one transaction (its ids in one query, a `COPY` per table, the commit), awaited while the loop runs the suite.

Written by the sink's thread instead, every one of psycopg's calls into libpq let go of the interpreter and took
it back from the event loop: 23,700 futex calls per 1,000 judged runs at concurrency 64 (`bench/store.py`'s
suite), against 2,400 with the writes on the loop, and the process's CPU 4.5% above `--no-store` where the same
writes made on the loop, blocking it, cost 0.4% (15 paired rounds). The sink keeps the thread for everything
else: the runs this writer could not write (a failed batch goes there whole, its rows in hand, and from then on
every batch does), the suite run's end, and a sink finished from outside a loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from niceeval.store._driver import Target, ids_query, postgresql_options, sequences_query
from niceeval.store._statements import RunRows, copy_statement, id_counts, run_tables

if TYPE_CHECKING:
    from psycopg import AsyncConnection


class LoopWriter:
    """Writes batches of runs into a PostgreSQL store from the event loop (one at a time: the sink awaits each)."""

    def __init__(self, target: Target) -> None:
        self._target = target
        self._connection: AsyncConnection[Any] | None = None
        self._sequences: dict[str, str] = {}
        self._busy = False
        self._dropped = False

    async def add_rows(self, suite_run_id: str, runs: Sequence[RunRows]) -> None:
        """Record finished runs, already turned into their rows, in one transaction; on any failure (or
        cancellation) nothing of them is written and the connection is closed."""
        if self._dropped:
            raise RuntimeError("the loop's writer was dropped")
        self._busy = True
        try:
            await self._add_rows(suite_run_id, runs)
        finally:
            self._busy = False
            if self._dropped:
                self._close_now()

    async def _add_rows(self, suite_run_id: str, runs: Sequence[RunRows]) -> None:
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

    def drop(self) -> None:
        """Close the connection without the loop: now, or when the write under way ends."""
        self._dropped = True
        if not self._busy:
            self._close_now()

    def _close_now(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.pgconn.finish()  # what `AsyncConnection.close` does, without awaiting

    async def aclose(self) -> None:
        """Close the connection (a later batch opens a new one)."""
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()


def _one(row: tuple[Any, ...] | None) -> tuple[Any, ...]:
    if row is None:  # pragma: no cover - a SELECT without FROM always returns its row
        raise RuntimeError("the store returned no row")
    return row
