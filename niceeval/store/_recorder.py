"""The store's one door for the runner: a `Recorder` writes suite runs, a `StoreSink` records one as it runs.

`Store` reads (the API docs/store.md tells users about); everything `niceeval run`, `niceeval calibrate`, the
pytest plugin and `niceeval gc` write goes through a `Recorder`, opened once per command from a store location
(`Recorder.open`, which reads nothing and imports SQLAlchemy only to create or migrate the store) or from a `Store`
already open for reading (`Recorder.of`). It owns the writes as the runner needs them: the suite run's lease, its
start, more planned runs, finished runs, its end (`SuiteEnd`), the shards' joins and ends, and deleting old runs.

`Recorder.sink(start)` is the `StoreSink`, the reporter that records one suite run while it runs: it records the
suite run when it starts (or, for `--resume`, plans more of it; a shard's was recorded when it joined), takes its
lease, hands every finished run to the store's `BatchWriter` (`_batches`, one per backend, chosen when the recorder
opens), and at the end closes the suite run with how it ended: `incomplete` when some runs could not be stored. A
store that fails mid-run never stops the suite: the runs it could not take are counted, and a warning says so.
"""

from __future__ import annotations

import atexit
import contextlib
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from niceeval._core.outcome import Outcome
from niceeval._core.results import RunResult
from niceeval._core.summary import PlannedEval, Problem, SuiteSummary, plan_index
from niceeval.store._batches import JOIN_TIMEOUT_S, BatchWriter, Closing, Finished, Unstored
from niceeval.store._connection import WriteConnection
from niceeval.store._driver import Kind
from niceeval.store._errors import StoreError
from niceeval.store._lease import Lease, LeaseHeld, held_message, take_lease
from niceeval.store._meta import niceeval_version
from niceeval.store._postgresql_batches import PostgresqlBatches
from niceeval.store._sqlite_batches import SqliteBatches
from niceeval.store._statements import RunRows
from niceeval.store._suite_run import ShardJoin, SuiteEnd, SuiteRunStart, SuiteStatus
from niceeval.store._url import StoreUrlError, masked, resolve_url

if TYPE_CHECKING:
    from niceeval.store._models import AcceptanceInfo
    from niceeval.store._store import Store

__all__ = ["Lease", "Recorder", "ShardJoin", "StoreSink", "SuiteEnd", "masked", "niceeval_version"]


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
        connection = WriteConnection.to_ready_store(url)
        if connection is not None:
            return cls(connection, url=url)
        from niceeval.store._store import Store

        return cls.of(Store.open(url, root=root), owns_store=True)

    @classmethod
    def of(cls, store: Store, *, owns_store: bool = False) -> Recorder:
        """The recorder of an open `store` (closed with the recorder only when `owns_store`)."""
        url = store.engine.url.render_as_string(hide_password=False)
        return cls(WriteConnection.beside(store.engine, url), url=url, store=store, owns_store=owns_store)

    @property
    def url(self) -> str:
        """The store's URL with any password masked."""
        return self.connection.url

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

    def outcomes(self, ref: str) -> dict[tuple[str, int], Outcome]:
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

    def accept(self, acceptance: AcceptanceInfo) -> bool:
        """Record that an experiment adopts a recorded eval run for a slot identity (the run is not touched);
        False when it had already."""
        from niceeval.store import _experiments
        from niceeval.store._open import write_transaction

        with write_transaction(self.store.engine) as conn:
            return _experiments.accept(conn, acceptance)

    def rename_experiment(self, old: str, new: str) -> int:
        """Move experiment `old`'s history (suite runs, acceptances) to `new`; how many suite runs moved.

        Raises:
            RunNotFound: `old` has no history, or `new` has some already.
        """
        from niceeval.store import _experiments
        from niceeval.store._open import write_transaction

        with write_transaction(self.store.engine) as conn:
            return _experiments.rename(conn, old, new)

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


class StoreSink:
    """A reporter-shaped sink that records a suite run in the results store.

    Args:
        recorder: Where to write.
        start: The suite run's identity and context (`start.id` is the run id reports carry).
        resume: Complete the existing suite run `start.id` instead of creating it.
        shard: Write as this shard of suite run `start.id`, which `Recorder.join_shard` made or joined already;
            finishing closes the shard (and the suite run, when it is the last shard to finish).
        warnings: Where the end-of-run warning goes when some runs could not be stored.
        lease: The suite run's lease, already taken (`--resume` takes it before planning); without one, a new
            suite run takes its own when it starts. Released when the suite run is closed.
    """

    def __init__(
        self,
        recorder: Recorder,
        start: SuiteRunStart,
        *,
        resume: bool = False,
        shard: int | None = None,
        warnings: TextIO | None = None,
        lease: Lease | None = None,
    ) -> None:
        self.recorder = recorder
        self.start_info = start
        self.resume = resume
        self.shard = shard
        self.received = 0
        self._lease = lease
        self._warnings = warnings
        self._unstored = Unstored(recorder.damage)
        self._batches: BatchWriter | None = None
        """What writes the runs, once the suite run is recorded (None: it could not be)."""
        self._started = False
        self._early: list[Finished] = []
        """Runs that finished before `start`, handed to the batch writer there."""
        self._finished = False
        self._settled = False
        self._stored: set[tuple[str, int]] = set()
        """On resume or a shard's retry: eval runs already in the suite run (replayed to reporters; not written)."""
        self._planned: dict[str, int] = {}
        """Each adaptive eval's planned runs at the start (its repeats raise them as the suite goes; no other eval's
        runs grow)."""
        self._adaptive: list[PlannedEval] = []

    @property
    def unstored(self) -> int:
        """Runs that could not be stored (after `finish`: once the writer has taken the last ones)."""
        self.settle()
        return self._unstored.count

    @property
    def error(self) -> str | None:
        """The first write error, in words (after `finish`: once the writer has taken the last runs)."""
        self.settle()
        return self._unstored.error

    @property
    def run_id(self) -> str:
        return self.start_info.id

    @property
    def url(self) -> str:
        """The store's URL, password masked."""
        return self.recorder.url

    @property
    def store(self) -> Store:
        """The `Store` for reading (`--baseline`), once the writer has taken the last runs."""
        self.settle()
        return self.recorder.store

    def close(self) -> None:
        """Release the store's connections (after `finish`, once the writer has taken the last runs)."""
        self.settle()
        self.recorder.close()

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        self._adaptive = plan_index(plan).adaptive()  # the suite's own plan holds them: no pass over its datasets
        self._planned = {p.id: p.runs for p in self._adaptive}
        try:
            if self.resume or self.shard is not None:
                self._stored = set(self.recorder.outcomes(self.run_id))
            if self.resume:
                self.recorder.extend(self.run_id, plan)
            elif self.shard is None:  # a shard's suite run and plan were recorded when it joined
                self.recorder.begin(self.start_info, plan)
            if self._lease is None and self.shard is None:
                self._lease = self.recorder.lease(self.run_id)  # a resume of this run while it runs is refused
            self._batches = self.recorder.batch_writer(self.run_id, self._unstored)
        except Exception as exc:  # the suite runs anyway; the warning at the end counts what was lost
            self._unstored.failed(exc)
        self._started = True
        early, self._early = self._early, []
        for run in early:
            self._take(run)

    def run_finished(self, result: RunResult) -> None:
        if (result.eval_id, result.run_index) in self._stored:
            return
        self.received += 1
        finished = Finished(result, datetime.now(UTC))
        if self._started:
            self._take(finished)
        else:
            self._early.append(finished)

    def _take(self, run: Finished) -> None:
        if self._batches is not None:
            self._batches.add(run)
        else:  # the suite run could not be recorded
            self._unstored.lost(1)

    async def drain(self) -> None:
        """On the event loop, before `finish`: the writes the loop makes itself end there."""
        if self._batches is not None:
            await self._batches.flush()

    def finish(self, summary: SuiteSummary) -> None:
        """The suite ended: the writer takes the last runs and closes the suite run while the other reporters
        write theirs (their summaries, not the store, are what a user waits for). Whatever reads the outcome
        (`unstored`, `error`, `store`, `close`) waits for the writer first, and so does the process's exit."""
        whole = self.shard is None and not self._grown()
        closing = Closing(
            end=(lambda: self._end(summary)) if whole else None,
            record=lambda: self._record_end(summary),
            then=self._release,
        )
        self._finished = True
        if self._batches is None:
            self._release()
        else:
            self._batches.close(closing)
        atexit.register(self.settle)

    def settle(self) -> None:
        """Once the suite has ended: wait until the writer has taken the last runs (warn if some were lost)."""
        if not self._finished or self._settled:
            return
        self._settled = True
        atexit.unregister(self.settle)
        if self._batches is not None and not self._batches.join(JOIN_TIMEOUT_S):
            taking = TimeoutError(f"the store took over {JOIN_TIMEOUT_S:g} s to take the last runs")
            self._unstored.all_of(self.received, taking)
        if self._unstored.count:
            self._warn()

    def _grown(self) -> list[PlannedEval]:
        """Evals whose adaptive repeats ran more than planned (the suite run records how many each got): the
        planned evals are the suite's own records, their runs raised in place as repeats are queued."""
        return [planned for planned in self._adaptive if planned.runs > self._planned[planned.id]]

    def _end(self, summary: SuiteSummary) -> SuiteEnd:
        """How the suite ended, as the store records it (`incomplete` when some of its runs were not stored)."""
        status: SuiteStatus = "incomplete" if self._unstored.count else "finished"
        return SuiteEnd(
            status="interrupted" if summary.interrupted else status,
            exit_code=summary.exit_code,
            duration_s=summary.duration_s,
            errors=tuple({"location": p.location, "message": p.message} for p in summary.problems),
            stopped=summary.stopped,
        )

    def _record_end(self, summary: SuiteSummary) -> bool:
        """Close the suite run (or this shard of it), on the writer thread after the last runs; whether it could."""
        try:
            if self.shard is not None:
                self.recorder.finish_shard(self.run_id, self.shard, self._end(summary))
                return True
            grown = self._grown()
            if grown:  # adaptive repeats: the suite run records how many runs each eval got
                self.recorder.extend(self.run_id, grown)
            self.recorder.finish(self.run_id, self._end(summary))
        except Exception as exc:
            self._unstored.failed(exc)
            return False
        return True

    def _release(self) -> None:
        if self._lease is not None:
            self._lease.release()

    def _warn(self) -> None:
        out = self._warnings or sys.stderr
        if self._batches is None:
            again = "the suite run itself could not be recorded"
        elif self.shard is not None:
            again = "running this shard's command again runs the missing ones once the store is back"
        else:
            again = f"`niceeval run --resume {self.run_id}` runs the missing ones again once the store is back"
        with contextlib.suppress(OSError):
            print(
                f"niceeval: warning: {self._unstored.count} of {self.received} runs were not stored in the "
                f"results store {self.recorder.url} ({self._unstored.error}). The reports include them; {again}.",
                file=out,
            )
