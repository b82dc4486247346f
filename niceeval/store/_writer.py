"""The store as `niceeval run` writes it: one driver connection, and SQLAlchemy only when something reads.

`open_recorder` gives a `RunWriter` when the store is a SQLite file or a PostgreSQL database already at this
niceeval's schema revision (the common case: every run after the first); otherwise (no store yet, an older schema,
anything the driver-level path does not open itself) it opens `Store`, which creates or migrates the schema and
says what is wrong in its own words, and the run writes through that. Both write with the same code (`_write`).
What reads the store during a run (`--baseline`, the shards' bookkeeping) opens the full `Store` when asked.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from niceeval._core.outcome import Outcome
from niceeval._core.results import RunResult
from niceeval._core.summary import PlannedEval
from niceeval.store import _write
from niceeval.store._damage import check_sqlite_file, damage_message
from niceeval.store._driver import DIALECTS, Busy, Dialect, Session, Target, connect, parse_url, revision, writing
from niceeval.store._errors import StoreError
from niceeval.store._lease import Lease, LeaseHeld, held_message, take_lease
from niceeval.store._meta import SCHEMA_REVISION
from niceeval.store._suite_run import SuiteEnd, SuiteRunStart
from niceeval.store._url import StoreUrlError, resolve_url
from niceeval.store._write import RunRows

if TYPE_CHECKING:
    from niceeval.store._store import Store

_IDLE_S = 30.0
"""PostgreSQL: a connection idle this long is tried (`SELECT 1`) before a write, and opened again if the server or
the network dropped it meanwhile (the suite's batches go over the event loop's own connection: this one may have
written nothing since the suite began)."""


class RunWriter:
    """Writes suite runs into a store already at this niceeval's schema, through its driver alone.

    It has the methods of `Store` a run's sink calls; `store()` is the full `Store` on the same database, opened
    on first use (reads, shards). Its connection is used by one thread at a time (the sink's start, then the
    event loop and the sink's writer thread in turn); a PostgreSQL connection lost mid-run (or found dead after
    `_IDLE_S` unused: the loop writes a suite's batches over a connection of its own) is opened again for the next
    write.
    """

    def __init__(self, target: Target, connection: Any, url: str) -> None:
        self.target = target
        self._url = url
        self._connection = connection
        self._dialect = DIALECTS[target.kind]
        self._sequences: dict[str, str] = {}
        self._store: Store | None = None
        self._used = time.monotonic()
        """When the connection last wrote (PostgreSQL: checked before a write after `_IDLE_S` without one)."""

    @property
    def url(self) -> str:
        """The store's URL with any password masked."""
        return self.target.shown

    def store(self) -> Store:
        """The full `Store` on this database (imports SQLAlchemy; opened once)."""
        if self._store is None:
            from niceeval.store._store import Store

            self._store = Store.open(self._url)
        return self._store

    def close(self) -> None:
        """Close the connection (and the full `Store`, when one was opened)."""
        with contextlib.suppress(Exception):
            self._connection.close()
        if self._store is not None:
            self._store.close()

    def damage(self, exc: BaseException) -> str | None:
        """A message naming the damaged store when `exc` says its file is damaged, else None."""
        return damage_message(exc, self.target.database or self.url)

    @contextmanager
    def _writing(self, *, wait: bool = True) -> Iterator[Session]:
        connection = self._connection
        if self.target.kind == "postgresql":
            if time.monotonic() - self._used > _IDLE_S and not (connection.closed or connection.broken):
                with contextlib.suppress(Exception):  # a dead connection is marked broken: open another
                    connection.execute("SELECT 1")
                    connection.rollback()
            if connection.closed or connection.broken:
                with contextlib.suppress(Exception):
                    connection.close()
                self._connection = connection = connect(self.target)  # the server is back: write again
        try:
            with writing(connection, self._dialect, wait=wait) as session:
                session.sequences = self._sequences
                yield session
        finally:
            self._used = time.monotonic()

    def lease(self, suite_run_id: str) -> Lease:
        """The right to write suite run `suite_run_id` (see `Store.lease`)."""
        try:
            return take_lease(self.target, suite_run_id)
        except LeaseHeld:
            raise StoreError(held_message(suite_run_id)) from None

    def begin(self, start: SuiteRunStart, plan: Sequence[PlannedEval]) -> None:
        """Record a new suite run, status `running`, with the evals it plans."""
        with self._writing() as session:
            _write.insert_suite(session, start, plan)

    def extend(self, suite_run_id: str, plan: Sequence[PlannedEval]) -> None:
        """Plan more evals (or more runs of planned ones) in an existing suite run, and mark it `running`."""
        with self._writing() as session:
            _write.add_plan(session, suite_run_id, plan)
            _write.reopen(session, suite_run_id)

    @property
    def dialect(self) -> Dialect:
        """What this store's database takes (rows built for `add_rows`)."""
        return self._dialect

    def add(self, suite_run_id: str, results: Sequence[RunResult]) -> None:
        """Record finished eval runs in a suite run (one transaction)."""
        self.add_rows(suite_run_id, results)

    def add_rows(self, suite_run_id: str, runs: Sequence[RunResult | RunRows]) -> None:
        """Record finished eval runs, some already turned into their rows (one transaction)."""
        with self._writing() as session:
            _write.insert_runs(session, suite_run_id, runs)

    def writes_inline(self) -> bool:
        """Whether the event loop may write the runs itself (`add_rows_now`): SQLite, where a batch is a few
        milliseconds of CPU and never a network round trip.

        From this call on, the writer's commits no longer checkpoint SQLite's write-ahead log when it fills (an
        `fsync` the event loop would wait for): the sink's thread calls `checkpoint` instead.
        """
        if self.target.kind != "sqlite":
            return False
        self._connection.execute("PRAGMA wal_autocheckpoint=0")
        return True

    def add_rows_now(self, suite_run_id: str, runs: Sequence[RunResult | RunRows]) -> bool:
        """SQLite: record finished eval runs (one transaction) if no other writer holds the store's write lock,
        without waiting for it; False, nothing written, if one does."""
        try:
            with self._writing(wait=False) as session:
                _write.insert_runs(session, suite_run_id, runs)
        except Busy:
            return False
        return True

    def end_now(
        self,
        suite_run_id: str,
        runs: Sequence[RunResult | RunRows],
        end: SuiteEnd,
    ) -> bool:
        """SQLite: record the last eval runs and close the suite run, in one transaction, if no other writer holds
        the store's write lock, without waiting for it; False, nothing written, if one does."""
        try:
            with self._writing(wait=False) as session:
                _write.insert_runs(session, suite_run_id, runs)
                _write.finish_suite(session, suite_run_id, end)
        except Busy:
            return False
        return True

    def checkpoint(self) -> None:
        """SQLite: copy the write-ahead log's committed pages into the database file, as far as no reader needs
        them (what a commit filling the log does, unless `writes_inline` turned that off)."""
        self._connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def finish(self, suite_run_id: str, end: SuiteEnd) -> None:
        """Close a suite run: how it ended, and totals counted from what it stored."""
        with self._writing() as session:
            _write.finish_suite(session, suite_run_id, end)

    def outcomes(self, ref: str) -> dict[tuple[str, int], Outcome]:
        """See `Store.outcomes`."""
        return self.store().outcomes(ref)

    def finish_shard(self, suite_run_id: str, shard: int, end: SuiteEnd) -> None:
        """See `Store.finish_shard`."""
        self.store().finish_shard(suite_run_id, shard, end)


def open_recorder(location: str, root: Path) -> RunWriter | Store:
    """What records a run in the store at `location`: a `RunWriter` when the store is ready for one, else the
    `Store` (created or migrated); `StoreError` says what is wrong."""
    try:
        url = resolve_url(location, root)
    except StoreUrlError as exc:
        raise StoreError(str(exc)) from None
    writer = _ready_writer(url)
    if writer is not None:
        return writer
    from niceeval.store._store import Store

    return Store.open(url, root=root)


def _ready_writer(url: str) -> RunWriter | None:
    """A writer on the store at `url` when it exists at this niceeval's revision; None: let `Store` open it."""
    target = parse_url(url)
    if not target.own_driver or target.in_memory:
        return None
    if target.kind == "sqlite":
        path = Path(target.database or "")
        if not path.is_file() or check_sqlite_file(path) is not None:
            return None  # a new store is created, a damaged one named, by `Store`
    try:
        connection = connect(target)
    except Exception as exc:
        if target.kind == "sqlite":
            return None
        raise StoreError(_unreachable(target, exc)) from None
    try:
        current = revision(connection, target.kind)
    except Exception:
        current = None
    if current != SCHEMA_REVISION:
        with contextlib.suppress(Exception):
            connection.close()
        return None
    return RunWriter(target, connection, url)


def _unreachable(target: Target, exc: BaseException) -> str:
    text = str(exc).strip()
    detail = text.splitlines()[0] if text else type(exc).__name__
    if target.password:
        detail = detail.replace(target.password, "***")
    return (
        f"cannot open the results store {target.shown}: {detail}. Check the URL, or pass --no-store to run without it."
    )
