"""SQLite's batch writer: the thread a run finishes on writes the batch itself, never waiting for the store.

A finished run joins the pending runs as it is; the first run to finish `GATHER_S` or more after the oldest pending
one turns them all into their rows and writes them in one transaction, begun only if no other writer holds the
store's lock (rows built together cost less than the same rows built one run at a time, and a thread doing it made
the event loop wait for the interpreter at each of the driver's statements). When the lock is taken (another
process writing) or the writer thread is busy, the runs go to that thread, which may wait. The thread also writes
what no later run came to write (the last runs before a pause) and checkpoints the write-ahead log every few
commits (no commit does: that `fsync` would be the loop's wait). At the end the loop writes the last runs and
closes the suite run in one transaction if it can without waiting; else the thread does both, and if the end
cannot be written (a disk too full for the log to grow) it checkpoints and tries once more: the log then starts
over from its beginning, in space it already has.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from dataclasses import dataclass

from niceeval.store import _batches
from niceeval.store._batches import Closing, Finished, Pending, Unstored, rows_of, write_batches
from niceeval.store._connection import WriteConnection
from niceeval.store._statements import RunRows

_CHECKPOINT_EVERY = 4
"""Commits between two checkpoints of the write-ahead log by the writer thread: the last one, as the suite ends,
then copies only the last commits' pages, overlapped with the reports."""


@dataclass(frozen=True, slots=True)
class _End:
    closing: Closing
    ended: bool
    """The thread a run finishes on closed the suite run already: the thread only checkpoints."""


class SqliteBatches:
    """Writes a suite run's finished runs into a SQLite store (see the module's docstring)."""

    def __init__(self, connection: WriteConnection, suite_run_id: str, unstored: Unstored) -> None:
        connection.defer_checkpoints()
        self._connection = connection
        self._suite_run_id = suite_run_id
        self._unstored = unstored
        self._pending = Pending()
        self._writing = threading.Lock()
        """Held by whoever writes: the thread runs finish on (never waiting for it) or the writer thread."""
        self._handed = 0
        """Batches handed to the writer thread and not written yet (guarded by `_writing`)."""
        self._commits = 0
        """Commits since the write-ahead log's last checkpoint (guarded by `_writing`)."""
        self._queue: queue.SimpleQueue[list[RunRows] | _End] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="niceeval-store-writer", daemon=True)
        self._thread.start()

    def add(self, run: Finished) -> None:
        """Take a finished run; write the pending ones when the oldest has waited `GATHER_S`, if nothing else is
        writing (else the writer thread is: the runs wait their turn)."""
        if self._pending.add(run) >= _batches.GATHER_S and self._writing.acquire(blocking=False):
            try:
                self._write_pending(wait=False)
            finally:
                self._writing.release()

    async def flush(self) -> None:
        """Nothing to do on the loop: it writes as runs finish, and the last runs in `close`."""

    def close(self, closing: Closing) -> None:
        """Write the last runs and close the suite run in one transaction if no one else is writing, else hand
        both to the writer thread; either way the thread checkpoints the log and then ends."""
        self._queue.put(_End(closing, ended=self._end_now(closing)))

    def join(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _end_now(self, closing: Closing) -> bool:
        if closing.end is None or not self._writing.acquire(blocking=False):  # the thread ends it after its write
            return False
        try:
            if self._handed or len(self._pending) > _batches.BATCH:
                return False
            batch = rows_of(self._pending.take(), self._connection.dialect, self._unstored)
            ended = False
            with contextlib.suppress(Exception):  # the thread writes them again, one by one if it must
                ended = self._connection.end_now(self._suite_run_id, batch, closing.end())
            if not ended:
                self._pending.put_back(batch)
            return ended
        finally:
            self._writing.release()

    def _run(self) -> None:
        while True:
            try:
                item = self._queue.get(timeout=_batches.GATHER_S)
            except queue.Empty:
                item = None
            with self._writing:
                if isinstance(item, _End):  # after every batch handed over
                    self._end(item)
                    return
                if item is not None:  # runs that could not be written without waiting
                    self._write(item, wait=True)
                    self._handed -= 1
                self._write_pending(wait=True, waited=2 * _batches.GATHER_S)  # what no later run came to write
                if self._commits >= _CHECKPOINT_EVERY:
                    self._checkpoint()

    def _end(self, end: _End) -> None:
        try:
            if not end.ended:
                self._write_pending(wait=True)
                if not end.closing.record():  # a full disk: with the log copied, the end's write starts it over
                    self._checkpoint()
                    end.closing.record()
        finally:
            end.closing.then()
        self._checkpoint()  # the log's copy and `fsync` overlap the reports, not the connection's close

    def _write_pending(self, *, wait: bool, waited: float = 0.0) -> None:
        """Write the pending runs (the caller holds `_writing`) if the oldest has waited `waited` s. `wait=False`:
        the runs go to the writer thread when another writer holds the store's lock."""
        runs = self._pending.take(waited=waited)
        if runs:
            self._write(rows_of(runs, self._connection.dialect, self._unstored), wait=wait)

    def _write(self, runs: list[RunRows], *, wait: bool) -> None:
        left = write_batches(lambda batch: self._write_batch(batch, wait=wait), runs, self._unstored)
        if left:
            self._handed += 1
            self._queue.put(left)

    def _write_batch(self, batch: list[RunRows], *, wait: bool) -> bool:
        if wait:
            self._connection.add(self._suite_run_id, batch)
        elif not self._connection.add_now(self._suite_run_id, batch):
            return False
        self._commits += 1
        return True

    def _checkpoint(self) -> None:
        self._commits = 0
        with contextlib.suppress(Exception):  # a failed checkpoint loses nothing: the next one copies its pages
            self._connection.checkpoint()
