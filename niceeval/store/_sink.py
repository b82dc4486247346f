"""The store as a sink of finished runs: results are written in batches, each batch committed, off the
event loop's way.

On SQLite a finished run joins the pending runs as it is, and the first run to finish a quarter second or more
after the oldest pending one turns them all into their rows (`_write.run_rows`) and writes them, on the loop, in
one transaction: a few dozen runs are a few milliseconds of CPU (rows built together cost less than the same rows
built one run at a time, between the suite's other work), and a thread doing it made the loop wait for the
interpreter at each of the driver's statements (more than the writing itself costs). The loop never waits there:
when the store's write lock is taken (another process writing) or the writer thread is busy, the runs go to that
thread, which may wait. The thread also writes what no later run came to write (the last runs before a pause) and
checkpoints SQLite's write-ahead log; at the end the loop writes the last runs and closes the suite run in one
transaction if it can without waiting, else the thread does. On PostgreSQL, in a suite running on an
asyncio loop, the loop writes each quarter second's runs over psycopg's async connection (`_loop_writer`), a task
that awaits the server while the suite runs, started by a timer when the first of them finishes; the runner's
`drain` writes the last ones before `finish`. A batch that fails there (or is cancelled) goes to the thread whole,
and so does every later one; like SQLite's, its batches are turned into rows when the loop writes them.
PostgreSQL outside a loop and a `Store` being created or migrated are written by the thread alone, a quarter
second's runs at a time, their rows built on the loop as each run finishes (the thread's Python work would be the
loop's wait). Either way a killed process
loses at most the runs in flight and those of the last second. A store that fails mid-run never stops the suite:
the runs it could not take are counted and a warning says so at the end.
"""

from __future__ import annotations

import atexit
import contextlib
import queue
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TextIO

from niceeval._core.results import RunResult
from niceeval._core.summary import PlannedEval, Problem, SuiteSummary
from niceeval.store._driver import store_wide
from niceeval.store._lease import Lease
from niceeval.store._statements import RunRows, run_rows
from niceeval.store._suite_run import SuiteEnd, SuiteRunStart, SuiteStatus

if TYPE_CHECKING:
    import asyncio

    from niceeval.store._connection import WriteConnection
    from niceeval.store._loop_writer import LoopWriter
    from niceeval.store._recorder import Recorder
    from niceeval.store._store import Store

_BATCH = 256
_GATHER_S = 0.25
"""How long the runs that follow the first of a batch gather before they are written: one transaction for all
of them (each costs a commit). The writer thread looks as often for runs left behind twice as long."""
_CHECKPOINT_EVERY = 4
"""Commits between two checkpoints of SQLite's write-ahead log by the writer thread (a few hundred judged runs at
full speed): the last one, as the suite ends, then copies only the last commits' pages (a 1,000-run suite's log
took 10 ms to copy at the end, while the process waited for it; 3 ms in pieces of 4 commits)."""
_JOIN_TIMEOUT_S = 300.0


@dataclass(frozen=True, slots=True)
class _Finish:
    summary: SuiteSummary


@dataclass(frozen=True, slots=True)
class _Finished:
    """A run not yet turned into its rows, and when it finished."""

    result: RunResult
    at: datetime


class StoreSink:
    """A reporter-shaped sink that records a suite run in the results store.

    Args:
        recorder: Where to write.
        start: The suite run's identity and context (`start.id` is the run id reports carry).
        resume: Complete the existing suite run `start.id` instead of creating it.
        shard: Write as this shard of suite run `start.id`, which `Store.join_shard` made or joined already;
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
        self._lease = lease
        self.start_info = start
        self.resume = resume
        self.shard = shard
        self._unwritten = 0
        """Runs the writer thread could not write (`unstored` adds those that could not be turned into rows)."""
        self._unbuilt = 0
        self.received = 0
        self._error: str | None = None
        self._finished = False
        self._settled = False
        self._warnings = warnings
        self._pending: list[RunRows | _Finished] = []
        """Runs not written yet (guarded by `_mutex`), the first of them since `_pending_at`: as they finished when
        the loop writes them (turned into rows with their batch), as rows when the thread does."""
        self._pending_at = 0.0
        self._mutex = threading.Lock()
        self._writing = threading.Lock()
        """Held by whoever writes through the recorder: the event loop (never waiting for it) or the thread."""
        self._inline: WriteConnection | None = None
        """The recorder, when the event loop writes through it itself (SQLite)."""
        self._unchecked = 0
        """Commits since the write-ahead log's last checkpoint (when the loop writes)."""
        self._handed = 0
        """Batches handed to the thread and not written yet (guarded by `_mutex`)."""
        self._ended = False
        """The loop closed the suite run itself (`_end_on_loop`): the thread only checkpoints."""
        self._queue: queue.SimpleQueue[list[RunRows] | _Finish] = queue.SimpleQueue()
        """For the thread: runs the loop could not write without waiting, then the suite's end."""
        self._thread: threading.Thread | None = None
        self._on_loop: LoopWriter | None = None
        """PostgreSQL, when the suite runs on an asyncio loop: what the loop writes its batches through (None once a
        batch failed there: the thread writes every batch from then on)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        """The loop's write under way."""
        self._timer: asyncio.TimerHandle | None = None
        """When the loop writes the pending runs next (none while a write is under way: it looks again when done)."""
        self._idle = threading.Event()
        """Set while no write of the loop's is under way (the thread closes the suite run only then)."""
        self._idle.set()
        self._open = False
        self._dialect = recorder.dialect
        self._stored: set[tuple[str, int]] = set()
        """On resume or a shard's retry: eval runs already in the suite run (replayed to reporters; not written)."""
        self._planned: dict[str, int] = {}
        """Each eval's planned runs at the start (adaptive repeats raise them as the suite goes)."""

    @property
    def unstored(self) -> int:
        """Runs that could not be stored (after `finish`: once the writer has taken the last ones)."""
        self.settle()
        return self._unwritten + self._unbuilt

    @property
    def error(self) -> str | None:
        """The first write error, in words (after `finish`: once the writer has taken the last runs)."""
        self.settle()
        return self._error

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
        self._planned = {p.id: p.runs for p in plan}
        try:
            if self.resume or self.shard is not None:
                self._stored = set(self.recorder.outcomes(self.run_id))
            if self.resume:
                self.recorder.extend(self.run_id, plan)
            elif self.shard is None:  # a shard's suite run and plan were recorded when it joined
                self.recorder.begin(self.start_info, plan)
            if self._lease is None and self.shard is None:
                self._lease = self.recorder.lease(self.run_id)  # a resume of this run while it runs is refused
            self._open = True
            connection = self.recorder.connection
            if connection.target.kind == "sqlite":
                connection.defer_checkpoints()
                self._inline = connection
            else:
                self._loop = _running_loop()
                if self._loop is not None:
                    from niceeval.store._loop_writer import LoopWriter

                    self._on_loop = LoopWriter(connection.target)
        except Exception as exc:  # the suite runs anyway; the warning at the end counts what was lost
            self._failed(exc)
        self._thread = threading.Thread(target=self._write_loop, name="niceeval-store-writer", daemon=True)
        self._thread.start()

    def run_finished(self, result: RunResult) -> None:
        if (result.eval_id, result.run_index) in self._stored:
            return
        self.received += 1
        if self._thread is not None and not self._open:  # the suite run could not be recorded
            self._unbuilt += 1
            return
        finished = _Finished(result, datetime.now(UTC))
        if self._inline is not None or self._on_loop is not None:  # the loop builds the rows when it writes them
            rows: RunRows | _Finished = finished
        else:
            built = self._built([finished])
            if not built:
                return
            rows = built[0]
        now = time.monotonic()
        with self._mutex:
            first = not self._pending
            if first:
                self._pending_at = now
            self._pending.append(rows)
            due = self._inline is not None and now - self._pending_at >= _GATHER_S
        if first and self._on_loop is not None:
            self._schedule()
        if due and self._writing.acquire(blocking=False):  # else the thread is writing: the runs wait their turn
            try:
                self._write_pending(wait=False)
            finally:
                self._writing.release()

    def _schedule(self) -> None:
        """On the loop: write the pending runs when the oldest is `_GATHER_S` old, unless a write is under way
        (it looks again when it is done)."""
        if self._on_loop is None or self._loop is None or self._task is not None or self._timer is not None:
            return
        with self._mutex:
            if not self._pending:
                return
            wait = self._pending_at + _GATHER_S - time.monotonic()
        self._timer = self._loop.call_later(max(wait, 0.0), self._due)

    def _due(self) -> None:
        self._timer = None
        if self._on_loop is not None and self._loop is not None and self._task is None:
            self._idle.clear()
            self._task = self._loop.create_task(self._write_on_loop())

    async def _write_on_loop(self) -> None:
        try:
            await self._write_pending_on_loop()
        except Exception:  # handed to the thread, which names the failure if it fails there too
            pass
        finally:
            self._task = None
            self._idle.set()
            self._schedule()

    async def _write_pending_on_loop(self) -> None:
        """The pending runs, written by the loop in transactions of up to `_BATCH`. A batch that fails there (or
        is cancelled) goes to the thread whole, which writes it or counts it lost, and takes every later batch."""
        with self._mutex:
            runs, self._pending = self._pending, []
        batch = self._built(runs)
        for first in range(0, len(batch), _BATCH):
            writer = self._on_loop
            if writer is None or not self._open:  # `finish` came first: the thread writes the rest
                self._hand(batch[first:])
                return
            try:
                await writer.add_rows(self.run_id, batch[first : first + _BATCH])
            except BaseException:
                self._on_loop = None
                self._hand(batch[first:])
                raise

    async def drain(self) -> None:
        """On the loop, before `finish`: the loop's write under way ends, the loop writes the runs still pending,
        then closes its connection (the thread closes the suite run). Without it, `finish` hands the pending runs
        to the thread, which waits for the write under way."""
        import asyncio

        if self._task is not None:
            await asyncio.wait({self._task}, timeout=_JOIN_TIMEOUT_S)  # never cancels the write itself
            if self._task is not None:
                return
        if self._timer is not None:  # set when no write is under way (the one that ended may have set it)
            self._timer.cancel()
            self._timer = None
        writer = self._on_loop
        if writer is None:
            return
        self._idle.clear()
        try:
            await self._write_pending_on_loop()
        except Exception:
            pass
        finally:
            self._idle.set()
        self._on_loop = None
        with contextlib.suppress(Exception):
            await writer.aclose()

    def finish(self, summary: SuiteSummary) -> None:
        """The suite ended: the writer takes the last runs and closes the suite run while the other reporters
        write theirs (their summaries, not the store, are what a user waits for). Whatever reads the outcome
        (`unstored`, `error`, `store`, `close`) waits for the writer first, and so does the process's exit."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._on_loop is not None:  # what is pending goes to the thread
            self._on_loop.drop()
            self._on_loop = None
        self._ended = self._end_on_loop(summary)
        self._queue.put(_Finish(summary))
        self._finished = True
        atexit.register(self.settle)

    def _end_on_loop(self, summary: SuiteSummary) -> bool:
        """SQLite: the loop writes the last pending runs and closes the suite run in one transaction, when nothing
        handed to the thread waits to be written and no other writer holds the store's lock (never waiting for
        it); else, or if that transaction fails, the thread does both, as for any store. A few milliseconds here
        spare the process's exit the wait for the thread, which took its turns with the console's summary for
        the interpreter (about 15 ms after a 1,000-run suite)."""
        writer = self._inline
        if writer is None or not self._open or self.shard is not None or self._grown(summary):
            return False
        if not self._writing.acquire(blocking=False):  # the thread is writing: it ends the suite run after
            return False
        try:
            with self._mutex:
                if self._handed or len(self._pending) > _BATCH:
                    return False
                runs, self._pending = self._pending, []
            batch = self._built(runs)
            ended = False
            with contextlib.suppress(Exception):  # the thread writes them again, one by one if it must
                ended = writer.end_now(self.run_id, batch, self._end(summary))
            if not ended:
                with self._mutex:
                    self._pending[:0] = batch
            return ended
        finally:
            self._writing.release()

    def _grown(self, summary: SuiteSummary) -> list[PlannedEval]:
        """Evals whose adaptive repeats ran more than planned (the suite run records how many each got)."""
        return [t.eval for t in summary.tallies if t.eval.runs > self._planned.get(t.eval.id, t.eval.runs)]

    def _end(self, summary: SuiteSummary) -> SuiteEnd:
        """How the suite ended, as the store records it (`incomplete` when some of its runs were not stored)."""
        status: SuiteStatus = "incomplete" if self._unwritten + self._unbuilt else "finished"
        return SuiteEnd(
            status="interrupted" if summary.interrupted else status,
            exit_code=summary.exit_code,
            duration_s=summary.duration_s,
            errors=tuple({"location": p.location, "message": p.message} for p in summary.problems),
        )

    def settle(self) -> None:
        """Once the suite has ended: wait until the writer has taken the last runs (warn if some were lost)."""
        if not self._finished or self._settled:
            return
        self._settled = True
        atexit.unregister(self.settle)
        if self._thread is not None:
            self._thread.join(_JOIN_TIMEOUT_S)
            if self._thread.is_alive():
                self._failed(TimeoutError(f"the store took over {_JOIN_TIMEOUT_S:g} s to take the last runs"))
                self._unwritten = self.received - self._unbuilt
        if self._unwritten + self._unbuilt:
            self._warn()

    def _failed(self, exc: BaseException, eval_id: str | None = None, run_index: int = 0) -> None:
        if self._error is None:
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            error = self.recorder.damage(exc) or (f"{type(exc).__name__}: {text}" if text else type(exc).__name__)
            if eval_id is not None:
                error += f"; first unstored: {eval_id} run {run_index + 1}"
            self._error = error

    def _write_loop(self) -> None:
        while True:
            try:
                item = self._queue.get(timeout=_GATHER_S)
            except queue.Empty:
                item = None
            with self._writing:
                if isinstance(item, list):  # runs the loop could not write without waiting
                    self._write_batches(item)
                    self._written()
                if isinstance(item, _Finish):  # a write of the loop's still under way (finished without `drain`)
                    self._idle.wait(_JOIN_TIMEOUT_S)
                    for late in _handed_over(self._queue):
                        self._write_batches(late)
                        self._written()
                # The runs no later run came to write (the loop writes its own a quarter second apart: the thread
                # leaves them a quarter second more; none while the loop's write is under way, which writes them
                # next); without a loop writing, every run gathered since the last look.
                loop_writes = self._inline is not None or self._on_loop is not None
                last = not loop_writes or isinstance(item, _Finish)
                if last or self._idle.is_set():
                    self._write_pending(older_than=0.0 if last else 2 * _GATHER_S)
                if isinstance(item, _Finish):  # the end comes after every run
                    self._close(item.summary)
                    return
                if self._inline is not None and self._unchecked >= _CHECKPOINT_EVERY:
                    self._unchecked = 0
                    with contextlib.suppress(Exception):  # a failed checkpoint loses nothing: the next one copies it
                        self._inline.checkpoint()

    def _write_pending(self, *, wait: bool = True, older_than: float = 0.0) -> None:
        """Write the pending runs (the caller holds `_writing`), if the oldest is at least `older_than` s old.
        `wait=False`: on the event loop, which hands the runs to the thread when the store's lock is taken."""
        with self._mutex:
            if not self._pending or time.monotonic() - self._pending_at < older_than:
                return
            runs, self._pending = self._pending, []
        self._write_batches(self._built(runs), wait=wait)

    def _built(self, runs: list[RunRows | _Finished]) -> list[RunRows]:
        """`runs` as rows: by whoever writes them, holding `_writing`, when the loop writes; on the loop as each run
        finishes when the thread does. A run whose data the store cannot take is counted as unstored (the other
        reporters still have it)."""
        built: list[RunRows] = []
        for run in runs:
            if isinstance(run, RunRows):
                built.append(run)
                continue
            try:
                built.append(run_rows(run.result, self._dialect, run.at))
            except Exception as exc:
                self._failed(exc, run.result.eval_id, run.result.run_index)
                self._unbuilt += 1
        return built

    def _write_batches(self, runs: list[RunRows], *, wait: bool = True) -> None:
        """Write `runs` in transactions of up to `_BATCH` (the caller holds `_writing`); those the loop could not
        write without waiting go to the thread."""
        for first in range(0, len(runs), _BATCH):
            left = self._write(runs[first : first + _BATCH], wait=wait)
            if left:
                self._hand(left + runs[first + _BATCH :])
                return

    def _hand(self, batch: list[RunRows]) -> None:
        """Give `batch` to the thread, which writes it when the store's lock is free."""
        with self._mutex:
            self._handed += 1
        self._queue.put(batch)

    def _written(self) -> None:
        """The thread wrote (or counted as lost) a batch handed to it."""
        with self._mutex:
            self._handed -= 1

    def _write(self, batch: list[RunRows], *, wait: bool = True) -> list[RunRows]:
        """Write `batch` (the caller holds `_writing`): the runs left unwritten because another writer held the
        store's lock and `wait` is False (else none: a run that fails to be written is counted as unstored)."""
        if not self._open:
            self._unwritten += len(batch)
            return []
        try:
            if wait or self._inline is None:
                self.recorder.add(self.run_id, batch)
            elif not self._inline.add_now(self.run_id, batch):
                return batch
            self._unchecked += 1
            return []
        except Exception as exc:
            wide = store_wide(exc)
            if len(batch) == 1 or wide:
                first = batch[0]  # a run's own failure names the run
                self._failed(exc, None if wide else first.eval_id, first.run_index)
                self._unwritten += len(batch)
                return []
            left: list[RunRows] = []
            for result in batch:  # one run's bad data never takes the runs written with it
                left += self._write([result], wait=wait)
            return left

    def _close(self, summary: SuiteSummary) -> None:
        try:
            if not self._ended:
                self._record_end(summary)
        finally:
            if self._lease is not None:
                self._lease.release()
        if self._inline is not None:  # the log's copy and `fsync` overlap the summaries, not the connection's close
            with contextlib.suppress(Exception):
                self._inline.checkpoint()

    def _record_end(self, summary: SuiteSummary) -> None:
        if not self._open:
            return
        end = self._end(summary)
        try:
            if self.shard is not None:
                self.recorder.finish_shard(self.run_id, self.shard, end)
            else:
                grown = self._grown(summary)
                if grown:  # adaptive repeats: the suite run records how many runs each eval got
                    self.recorder.extend(self.run_id, grown)
                self.recorder.finish(self.run_id, end)
        except Exception as exc:
            self._failed(exc)

    def _warn(self) -> None:
        out = self._warnings or sys.stderr
        if not self._open:
            again = "the suite run itself could not be recorded"
        elif self.shard is not None:
            again = "running this shard's command again runs the missing ones once the store is back"
        else:
            again = f"`niceeval run --resume {self.run_id}` runs the missing ones again once the store is back"
        with contextlib.suppress(OSError):
            print(
                f"niceeval: warning: {self._unwritten + self._unbuilt} of {self.received} runs were not stored in the "
                f"results store {self.recorder.url} ({self._error}). The reports include them; {again}.",
                file=out,
            )


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """The asyncio event loop running in this thread, if any (none under another async library)."""
    if "asyncio" not in sys.modules:
        return None
    import asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _handed_over(items: queue.SimpleQueue[list[RunRows] | _Finish]) -> list[list[RunRows]]:
    """The batches already in the thread's queue (what a write of the loop's handed over as it ended)."""
    found: list[list[RunRows]] = []
    while True:
        try:
            item = items.get_nowait()
        except queue.Empty:
            return found
        if isinstance(item, list):
            found.append(item)
