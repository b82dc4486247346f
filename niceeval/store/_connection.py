"""The connection a process writes suite runs through, and the writes it makes (each one transaction).

One DB-API connection, opened by the driver itself (`_driver.connect`: no SQLAlchemy) or, for a store the driver
does not open itself (options, another driver, a database in memory), taken from the `Store`'s engine. Every write
runs `_statements` on it: the suite run's header and plan, batches of finished runs, the end with its totals.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from niceeval._core.results import RunResult
from niceeval._core.summary import PlannedEval
from niceeval.store import _statements
from niceeval.store._damage import check_sqlite_file, damage_message
from niceeval.store._driver import (
    DIALECTS,
    Busy,
    Dialect,
    Session,
    Target,
    UnsupportedUrl,
    connect,
    parse_url,
    revision,
    store_wide,
    writing,
)
from niceeval.store._errors import StoreError
from niceeval.store._kept_sums import keep_sums
from niceeval.store._meta import SCHEMA_REVISION
from niceeval.store._statements import RunRows
from niceeval.store._suite_run import SuiteEnd, SuiteRunStart
from niceeval.store._tallies import keep_tallies
from niceeval.store._url import masked

if TYPE_CHECKING:
    from sqlalchemy import Engine

_IDLE_S = 30.0
"""PostgreSQL: a connection idle this long is tried (`SELECT 1`) before a write, and opened again if the server or
the network dropped it meanwhile (a suite's batches may go over the event loop's own connection: this one may have
written nothing since the suite began)."""


class WriteConnection:
    """The connection suite runs are written through, one transaction at a time whichever thread writes (the
    sink's start, the event loop, the writer thread, a pytest session planning more runs). A PostgreSQL connection
    lost mid-run (or found dead after `_IDLE_S` unused) is opened again for the next write.

    Args:
        target: What the connection is to.
        opened: The connection, open.
        reopen: Opens another one like it (PostgreSQL, when the server dropped the first).
        release: Lets go of a connection for good.
    """

    def __init__(
        self,
        target: Target,
        opened: Any,
        *,
        reopen: Callable[[], Any],
        release: Callable[[Any], None],
    ) -> None:
        self.target = target
        self.dialect: Dialect = DIALECTS[target.kind]
        self._connection = opened
        self._reopen = reopen
        self._release = release
        self._sequences: dict[str, str] = {}
        self._lock = threading.Lock()
        """Held for each transaction: two threads' statements never meet in one."""
        self._used = time.monotonic()
        """When the connection last wrote (PostgreSQL: checked before a write after `_IDLE_S` without one)."""

    @classmethod
    def of_driver(cls, target: Target, opened: Any | None = None) -> WriteConnection:
        """A connection the driver opens itself (`opened`, or a new one)."""
        return cls(
            target,
            connect(target) if opened is None else opened,
            reopen=lambda: connect(target),
            release=lambda connection: connection.close(),
        )

    @classmethod
    def of_engine(cls, target: Target, engine: Engine) -> WriteConnection:
        """A connection taken from `engine`'s pool, closed when released (its settings are a writer's)."""
        return cls(
            target,
            engine.raw_connection(),
            reopen=engine.raw_connection,
            release=lambda connection: connection.invalidate(),
        )

    @classmethod
    def to_ready_store(cls, url: str) -> WriteConnection | None:
        """A connection the driver opens itself to the store at `url` when it opens it as `Store` would and the
        store exists at this niceeval's schema; None: `Store` opens it first (a new store is created, an older one
        migrated, a damaged one named).

        Raises:
            StoreError: a PostgreSQL server that cannot be reached (named, password masked).
        """
        target = _driver_target(url)
        if target is None:
            return None
        opened = _ready_connection(target)
        return None if opened is None else cls.of_driver(target, opened)

    @classmethod
    def beside(cls, engine: Engine, url: str) -> WriteConnection:
        """A connection to the store `engine` reads at `url`: the driver's own when it opens it as `Store` would,
        else one of the engine's (its own settings: a SQLite URL's options, a database in memory)."""
        target = _driver_target(url)
        return cls.of_driver(target) if target is not None else cls.of_engine(_target(url), engine)

    @property
    def url(self) -> str:
        """The store's URL with any password masked."""
        return self.target.shown

    def close(self) -> None:
        """Let go of the connection."""
        with contextlib.suppress(Exception):
            self._release(self._connection)

    def damage(self, exc: BaseException) -> str | None:
        """A message naming the damaged store when `exc` says its file is damaged, else None."""
        return damage_message(exc, self.target.database or self.url)

    @contextmanager
    def _transaction(self, *, wait: bool = True) -> Iterator[Session]:
        """A write transaction; `wait=False` (SQLite): `Busy` at once, nothing begun, when another thread's
        transaction or another writer's lock is under way."""
        if not self._lock.acquire(blocking=wait):
            raise Busy
        try:
            with self._transaction_held(wait=wait) as session:
                yield session
        finally:
            self._lock.release()

    @contextmanager
    def _transaction_held(self, *, wait: bool) -> Iterator[Session]:
        connection = self._connection
        if self.target.kind == "postgresql":
            if time.monotonic() - self._used > _IDLE_S and not (connection.closed or connection.broken):
                with contextlib.suppress(Exception):  # a dead connection is marked broken: open another
                    connection.execute("SELECT 1")
                    connection.rollback()
            if connection.closed or connection.broken:
                self.close()
                self._connection = connection = self._reopen()  # the server is back: write again
        try:
            with writing(connection, self.dialect, wait=wait) as session:
                session.sequences = self._sequences
                yield session
        finally:
            self._used = time.monotonic()

    def begin(self, start: SuiteRunStart, plan: Sequence[PlannedEval]) -> None:
        """Record a new suite run, status `running`, with the evals it plans."""
        with self._transaction() as session:
            _statements.insert_suite(session, start, plan)

    def extend(self, suite_run_id: str, plan: Sequence[PlannedEval]) -> None:
        """Plan more evals (or more runs of planned ones) in an existing suite run, and mark it `running`."""
        with self._transaction() as session:
            _statements.add_plan(session, suite_run_id, plan)
            _statements.reopen(session, suite_run_id)

    def add(self, suite_run_id: str, runs: Sequence[RunResult | RunRows]) -> None:
        """Record finished eval runs, some already turned into their rows (one transaction)."""
        with self._transaction() as session:
            _statements.insert_runs(session, suite_run_id, runs)

    def add_now(self, suite_run_id: str, runs: Sequence[RunResult | RunRows]) -> bool:
        """SQLite: record finished eval runs (one transaction) if no other writer holds the store's write lock,
        without waiting for it; False, nothing written, if one does."""
        try:
            with self._transaction(wait=False) as session:
                _statements.insert_runs(session, suite_run_id, runs)
        except Busy:
            return False
        return True

    def end_now(self, suite_run_id: str, runs: Sequence[RunResult | RunRows], end: SuiteEnd) -> bool:
        """SQLite: record the last eval runs and close the suite run, in one transaction, if no other writer holds
        the store's write lock, without waiting for it; False, nothing written, if one does."""
        try:
            with self._transaction(wait=False) as session:
                _statements.insert_runs(session, suite_run_id, runs)
                _statements.finish_suite(session, suite_run_id, end)
        except Busy:
            return False
        self._keep_tallies(suite_run_id)
        return True

    def finish(self, suite_run_id: str, end: SuiteEnd) -> None:
        """Close a suite run: how it ended, and totals counted from what it stored."""
        with self._transaction() as session:
            _statements.finish_suite(session, suite_run_id, end)
        self._keep_tallies(suite_run_id)

    def _keep_tallies(self, suite_run_id: str) -> None:
        """Once the suite run is closed, its evals' tallies for the viewer (`_tallies`) and their score sums for
        `diff` (`_kept_sums`), in a transaction of their own: a store too full (or gone) to take them leaves the run
        closed without them, and the viewer folds its eval runs instead. The close never waits on them, so a full
        disk cannot leave a run `running`."""
        try:
            with self._transaction() as session:
                keep_tallies(session, suite_run_id)
                keep_sums(session, suite_run_id)
        except Exception as exc:
            if not store_wide(exc):
                raise

    def defer_checkpoints(self) -> None:
        """SQLite: from now on no commit checkpoints the write-ahead log when it fills (an `fsync` the event loop
        would wait for); the writer thread calls `checkpoint` instead."""
        with self._lock:
            self._connection.execute("PRAGMA wal_autocheckpoint=0")

    def checkpoint(self) -> None:
        """SQLite: copy the write-ahead log's committed pages into the database file, as far as no reader needs
        them (what a commit filling the log does, unless `defer_checkpoints` turned that off)."""
        with self._lock:
            self._connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


def _driver_target(url: str) -> Target | None:
    """The target of `url` when the driver opens it as `Store` would (no options, not in memory), else None."""
    try:
        target = parse_url(url)
    except UnsupportedUrl:
        return None
    return target if target.own_driver and not target.in_memory else None


def _target(url: str) -> Target:
    try:
        return parse_url(url)
    except UnsupportedUrl:
        raise StoreError(
            f"niceeval records runs in a SQLite file or a PostgreSQL database named by one host, not in {masked(url)}."
        ) from None


def _ready_connection(target: Target) -> Any | None:
    """A driver connection to the store at `target` when it exists at this niceeval's revision; None: let `Store`
    open it (a new store is created, an older one migrated, a damaged one named)."""
    if target.kind == "sqlite":
        path = Path(target.database or "")
        if not path.is_file() or check_sqlite_file(path) is not None:
            return None
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
    return connection


def _unreachable(target: Target, exc: BaseException) -> str:
    text = str(exc).strip()
    detail = text.splitlines()[0] if text else type(exc).__name__
    if target.password:
        detail = detail.replace(target.password, "***")
    return (
        f"cannot open the results store {target.shown}: {detail}. Check the URL, or pass --no-store to run without it."
    )
