"""The store's one door for the runner: a `Recorder` writes suite runs, a `StoreSink` records one as it runs.

`Store` reads (the API docs/store.md tells users about); everything `niceeval run`, `niceeval calibrate`, the
pytest plugin and `niceeval gc` write goes through a `Recorder`, opened once per command from a store location
(`Recorder.open`, which reads nothing and imports SQLAlchemy only to create or migrate the store) or from a `Store`
already open for reading (`Recorder.of`). It owns the writes as the runner needs them: the suite run's lease, its
start, more planned runs, finished runs, its end (`SuiteEnd`), the shards' joins and ends, and deleting old runs.
`Recorder.sink(start)` is the reporter that records one suite run while it runs (see `_sink`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from niceeval._core.results import RunResult
from niceeval._core.summary import PlannedEval
from niceeval.store._batches import BatchWriter, Unstored
from niceeval.store._connection import WriteConnection
from niceeval.store._damage import check_sqlite_file
from niceeval.store._driver import Dialect, Kind, Target, connect, parse_url, revision
from niceeval.store._errors import StoreError
from niceeval.store._lease import Lease, LeaseHeld, held_message, take_lease
from niceeval.store._meta import SCHEMA_REVISION
from niceeval.store._postgresql_batches import PostgresqlBatches
from niceeval.store._sink import StoreSink
from niceeval.store._sqlite_batches import SqliteBatches
from niceeval.store._statements import RunRows
from niceeval.store._suite_run import ShardJoin, SuiteEnd, SuiteRunStart
from niceeval.store._url import StoreUrlError, masked, resolve_url

if TYPE_CHECKING:
    from niceeval.store._store import Store

__all__ = ["Lease", "Recorder", "ShardJoin", "StoreSink", "SuiteEnd", "masked"]


class Recorder:
    """Writes suite runs into one store; `store` reads it (opened on first use when the recorder was not made from
    one). Open it with `Recorder.open(location, root)` or `Recorder.of(store)`; `close()` when done.

    Args:
        connection: The connection the suite runs are written through.
        url: The store's resolved URL (with its password: `store` opens it).
        store: The store, already open for reading.
        owns_store: Close `store` with the recorder (it was opened for the recorder).
    """

    def __init__(
        self, connection: WriteConnection, *, url: str, store: Store | None = None, owns_store: bool = False
    ) -> None:
        self.connection = connection
        self._url = url
        self._store = store
        self._owns_store = owns_store or store is None
        self._batches = _BATCH_WRITERS[connection.target.kind]
        """How this backend writes a suite run's finished runs (chosen here, once)."""

    @classmethod
    def open(cls, location: str, root: Path) -> Recorder:
        """The recorder of the store at `location` (a path below `root` or a URL), created or migrated first when
        it is not at this niceeval's schema (the only case that imports SQLAlchemy).

        Raises:
            StoreError: the store cannot be opened (the message names it, password masked, and what to do).
        """
        try:
            url = resolve_url(location, root)
        except StoreUrlError as exc:
            raise StoreError(str(exc)) from None
        target = _driver_target(url)
        opened = _ready_connection(target) if target is not None else None
        if opened is not None and target is not None:
            return cls(WriteConnection.of_driver(target, opened), url=url)
        from niceeval.store._store import Store

        return cls.of(Store.open(url, root=root), owns_store=True)

    @classmethod
    def of(cls, store: Store, *, owns_store: bool = False) -> Recorder:
        """The recorder of an open `store` (closed with the recorder only when `owns_store`)."""
        url = store.engine.url.render_as_string(hide_password=False)
        target = _driver_target(url)
        if target is not None:
            connection = WriteConnection.of_driver(target)
        else:  # the engine's own settings (a SQLite URL's options, a database in memory)
            connection = WriteConnection.of_engine(_target(url), store.engine)
        return cls(connection, url=url, store=store, owns_store=owns_store)

    @property
    def url(self) -> str:
        """The store's URL with any password masked."""
        return self.connection.url

    @property
    def dialect(self) -> Dialect:
        """What the store's database takes (the rows a run is written as)."""
        return self.connection.dialect

    @property
    def store(self) -> Store:
        """The `Store` for reading (imports SQLAlchemy; opened once, on first use)."""
        if self._store is None:
            from niceeval.store._store import Store

            self._store = Store.open(self._url)
        return self._store

    def close(self) -> None:
        """Close the connection (and the `Store`, when the recorder opened it)."""
        self.connection.close()
        if self._store is not None and self._owns_store:
            self._store.close()

    def damage(self, exc: BaseException) -> str | None:
        """A message naming the damaged store when `exc` says its file is damaged, else None."""
        return self.connection.damage(exc)

    def sink(
        self,
        start: SuiteRunStart,
        *,
        resume: bool = False,
        shard: int | None = None,
        warnings: TextIO | None = None,
        lease: Lease | None = None,
    ) -> StoreSink:
        """The reporter that records suite run `start.id` as it runs (see `StoreSink`)."""
        return StoreSink(self, start, resume=resume, shard=shard, warnings=warnings, lease=lease)

    def batch_writer(self, suite_run_id: str, unstored: Unstored) -> BatchWriter:
        """What writes suite run `suite_run_id`'s finished runs (counting in `unstored` what the store did not take),
        its writer thread started."""
        return self._batches(self.connection, suite_run_id, unstored)

    def lease(self, suite_run_id: str) -> Lease:
        """The right to write suite run `suite_run_id`, held until released or this process ends.

        Raises:
            StoreError: another process is writing it (running or resuming it) right now.
        """
        try:
            return take_lease(self.connection.target, suite_run_id)
        except LeaseHeld:
            raise StoreError(held_message(suite_run_id)) from None

    def begin(self, start: SuiteRunStart, plan: Sequence[PlannedEval]) -> None:
        """Record a new suite run, status `running`, with the evals it plans."""
        self.connection.begin(start, plan)

    def extend(self, suite_run_id: str, plan: Sequence[PlannedEval]) -> None:
        """Plan more evals (or more runs of planned ones) in an existing suite run, and mark it `running`."""
        self.connection.extend(suite_run_id, plan)

    def add(self, suite_run_id: str, runs: Sequence[RunResult | RunRows]) -> None:
        """Record finished eval runs in a suite run (one transaction)."""
        self.connection.add(suite_run_id, runs)

    def finish(self, suite_run_id: str, end: SuiteEnd) -> None:
        """Close a suite run: how it ended, and totals counted from what it stored."""
        self.connection.finish(suite_run_id, end)

    def outcomes(self, ref: str) -> dict[tuple[str, int], Any]:
        """The outcome of every eval run stored in a suite run (see `Store.outcomes`)."""
        return self.store.outcomes(ref)

    def join_shard(
        self, start: SuiteRunStart, plan: Sequence[PlannedEval], *, shard: int, count: int, digest: str
    ) -> ShardJoin:
        """Create suite run `start.id` with the whole `plan`, or join it, as shard `shard` of `count`.

        Safe when every shard starts at once: one creates the suite run, the others join it. `digest` stands for
        the plan (every shard must plan the same eval runs).

        Raises:
            StoreError: the suite run exists without shards, with another count or plan, or this shard finished.
        """
        from niceeval.store import _shards
        from niceeval.store._open import write_transaction

        with write_transaction(self.store.engine) as conn:
            return _shards.join_shard(conn, start, plan, shard=shard, count=count, digest=digest)

    def finish_shard(self, suite_run_id: str, shard: int, end: SuiteEnd) -> None:
        """Close one shard of a suite run; when every shard has finished, the suite run is `finished`."""
        from niceeval.store import _shards
        from niceeval.store._open import write_transaction

        with write_transaction(self.store.engine) as conn:
            _shards.finish_shard(conn, suite_run_id, shard, end)

    def gc(self, *, keep: int) -> tuple[int, int]:
        """Delete every suite run but the `keep` latest; a suite run still `running` is kept.

        Returns:
            How many suite runs and eval runs were deleted.
        """
        from niceeval.store import _prune
        from niceeval.store._open import write_transaction

        with write_transaction(self.store.engine) as conn:
            return _prune.delete_old(conn, keep)


_BATCH_WRITERS: dict[Kind, Callable[[WriteConnection, str, Unstored], BatchWriter]] = {
    "sqlite": SqliteBatches,
    "postgresql": PostgresqlBatches,
}


def _driver_target(url: str) -> Target | None:
    """The target of `url` when the driver opens it as `Store` would (no options, not in memory), else None."""
    from niceeval.store._driver import UnsupportedUrl

    try:
        target = parse_url(url)
    except UnsupportedUrl:
        return None
    return target if target.own_driver and not target.in_memory else None


def _target(url: str) -> Target:
    from niceeval.store._driver import UnsupportedUrl

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
