"""How a suite run's finished runs reach the store: gathered, then written in batches, each batch one transaction.

A `BatchWriter` does it for one backend (`_sqlite_batches`, `_postgresql_batches`), chosen once, when the recorder
opens. What both share is here: the runs waiting to be written (`Pending`), turning them into their rows (`rows_of`),
writing rows in transactions of up to `BATCH` runs where one run's bad data never takes the others with it
(`write_batches`), and the count of what the store did not take (`Unstored`). Either way a killed process loses at
most the runs in flight and those of the last second, and a store that fails mid-run never stops the suite.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from niceeval._core.results import RunResult
from niceeval.store._driver import Dialect, store_wide
from niceeval.store._statements import RunRows, run_rows
from niceeval.store._suite_run import SuiteEnd

GATHER_S = 0.25
"""How long the runs that follow the first of a batch gather before they are written: one transaction for all of
them (each costs a commit)."""
BATCH = 256
"""Runs per transaction, at most."""
JOIN_TIMEOUT_S = 300.0
"""How long the end of a suite waits for its writer thread before it counts the runs as lost."""


@dataclass(frozen=True, slots=True)
class Finished:
    """A run not yet turned into its rows, and when it finished (what its row says)."""

    result: RunResult
    at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class Closing:
    """How a suite run is closed once its last runs are written (what the sink hands `BatchWriter.close`)."""

    end: Callable[[], SuiteEnd] | None
    """A whole suite run whose plan did not grow: how it ended, decided when written (runs lost until then make
    it `incomplete`), which a backend may write in its last batch's transaction. None: only `record` closes it."""
    record: Callable[[], bool]
    """Closes the suite run through the recorder, waiting for the store (called by the writer thread); whether it
    could (a failure is counted, not raised)."""
    then: Callable[[], None]
    """Once the suite run is closed, or could not be: its lease released."""


class BatchWriter(Protocol):
    """One backend's way of writing a suite run's finished runs, a batch (one transaction) at a time.

    Built by the recorder (`Recorder.batch_writer`) when the suite run has started; it owns a writer thread for
    the writes that may wait.
    """

    def add(self, run: Finished) -> None:
        """Take a finished run, on the thread it finished on (the event loop, in a suite)."""

    async def flush(self) -> None:
        """On the event loop, before `close`: what the loop writes itself is written there."""

    def close(self, closing: Closing) -> None:
        """The suite ended: the last runs are written and the suite run closed by `closing`, off the caller's way
        (returns at once)."""

    def join(self, timeout: float) -> bool:
        """Wait up to `timeout` s for the writer thread to finish; whether it did."""


class Unstored:
    """What the store did not take of a suite run: how many runs, and the first failure in words."""

    def __init__(self, damage: Callable[[BaseException], str | None]) -> None:
        self._damage = damage
        self._lock = threading.Lock()
        self.count = 0
        self.error: str | None = None

    def lost(self, runs: int, exc: BaseException | None = None, *, first: RunRows | RunResult | None = None) -> None:
        """`runs` runs were not stored because of `exc` (`first`: the first of them, named when it is the run's own
        failure; no `exc`: a failure kept already, such as the suite run's own, cost them)."""
        with self._lock:
            self.count += runs
        if exc is not None:
            self.failed(exc, first=first)

    def failed(self, exc: BaseException, *, first: RunRows | RunResult | None = None) -> None:
        """Keep `exc` as the failure the user is told of, unless an earlier one is kept."""
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        error = self._damage(exc) or (f"{type(exc).__name__}: {text}" if text else type(exc).__name__)
        if first is not None:
            error += f"; first unstored: {first.eval_id} run {first.run_index + 1}"
        with self._lock:
            self.error = self.error or error

    def all_of(self, received: int, exc: BaseException) -> None:
        """None of the `received` runs can be counted as stored (the writer never finished)."""
        with self._lock:
            self.count = received
        self.failed(exc)


class Pending:
    """Finished runs not written yet: added by the thread runs finish on, taken by whoever writes them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: list[RunRows | Finished] = []
        self._since = 0.0
        """When the oldest pending run was added."""

    def __len__(self) -> int:
        return len(self._runs)

    def add(self, run: RunRows | Finished) -> float:
        """Add `run`; how long the oldest pending run has waited, in seconds."""
        now = time.monotonic()
        with self._lock:
            if not self._runs:
                self._since = now
            self._runs.append(run)
            return now - self._since

    def waited(self) -> float:
        """How long the oldest pending run has waited, in seconds (0 when none waits)."""
        with self._lock:
            return time.monotonic() - self._since if self._runs else 0.0

    def take(self, *, waited: float = 0.0) -> list[RunRows | Finished]:
        """Every pending run, if the oldest has waited `waited` s or more; else none."""
        with self._lock:
            if not self._runs or time.monotonic() - self._since < waited:
                return []
            runs, self._runs = self._runs, []
            return runs

    def put_back(self, runs: Sequence[RunRows]) -> None:
        """Make `runs` pending again, before the others (a write of them did not happen)."""
        if runs:
            with self._lock:
                if not self._runs:
                    self._since = time.monotonic()
                self._runs[:0] = runs


def rows_of(runs: Sequence[RunRows | Finished], dialect: Dialect, unstored: Unstored) -> list[RunRows]:
    """`runs` as their rows, stamped as finished when they did; a run whose data the store cannot take is counted as
    unstored (the other reporters still have it)."""
    built: list[RunRows] = []
    for run in runs:
        if isinstance(run, RunRows):
            built.append(run)
            continue
        try:
            built.append(run_rows(run.result, dialect, run.at))
        except Exception as exc:
            unstored.lost(1, exc, first=run.result)
    return built


def write_batches(write: Callable[[list[RunRows]], bool], runs: list[RunRows], unstored: Unstored) -> list[RunRows]:
    """Write `runs` through `write` in transactions of up to `BATCH`; the runs left unwritten because `write` found
    the store's lock taken and would not wait (returned False). A run that fails to be written is counted as unstored.
    """
    for first in range(0, len(runs), BATCH):
        left = _write_batch(write, runs[first : first + BATCH], unstored)
        if left:
            return left + runs[first + BATCH :]
    return []


def _write_batch(write: Callable[[list[RunRows]], bool], batch: list[RunRows], unstored: Unstored) -> list[RunRows]:
    try:
        return [] if write(batch) else batch
    except Exception as exc:
        wide = store_wide(exc)
        if len(batch) == 1 or wide:  # a run's own failure names the run
            unstored.lost(len(batch), exc, first=None if wide else batch[0])
            return []
        left: list[RunRows] = []
        for run in batch:  # one run's bad data never takes the runs written with it
            left += _write_batch(write, [run], unstored)
        return left
