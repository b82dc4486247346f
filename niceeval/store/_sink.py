"""The store as a sink of finished runs: a reporter that records one suite run while it runs.

It records the suite run when it starts (or, for `--resume`, plans more of it; a shard's was recorded when it
joined), takes the suite run's lease, hands every finished run to its store's `BatchWriter` (`_batches`), and at the
end closes the suite run with how it ended (`SuiteEnd`): `incomplete` when some runs could not be stored. A store
that fails mid-run never stops the suite: the runs it could not take are counted and a warning says so at the end.
"""

from __future__ import annotations

import atexit
import contextlib
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TextIO

from niceeval._core.results import RunResult
from niceeval._core.summary import PlannedEval, Problem, SuiteSummary
from niceeval.store._batches import JOIN_TIMEOUT_S, BatchWriter, Closing, Finished, Unstored
from niceeval.store._lease import Lease
from niceeval.store._suite_run import SuiteEnd, SuiteRunStart, SuiteStatus

if TYPE_CHECKING:
    from niceeval.store._recorder import Recorder
    from niceeval.store._store import Store


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
        """Each eval's planned runs at the start (adaptive repeats raise them as the suite goes)."""

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
        whole = self.shard is None and not self._grown(summary)
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

    def _grown(self, summary: SuiteSummary) -> list[PlannedEval]:
        """Evals whose adaptive repeats ran more than planned (the suite run records how many each got)."""
        return [t.eval for t in summary.tallies if t.eval.runs > self._planned.get(t.eval.id, t.eval.runs)]

    def _end(self, summary: SuiteSummary) -> SuiteEnd:
        """How the suite ended, as the store records it (`incomplete` when some of its runs were not stored)."""
        status: SuiteStatus = "incomplete" if self._unstored.count else "finished"
        return SuiteEnd(
            status="interrupted" if summary.interrupted else status,
            exit_code=summary.exit_code,
            duration_s=summary.duration_s,
            errors=tuple({"location": p.location, "message": p.message} for p in summary.problems),
        )

    def _record_end(self, summary: SuiteSummary) -> None:
        """Close the suite run (or this shard of it), on the writer thread after the last runs."""
        try:
            if self.shard is not None:
                self.recorder.finish_shard(self.run_id, self.shard, self._end(summary))
                return
            grown = self._grown(summary)
            if grown:  # adaptive repeats: the suite run records how many runs each eval got
                self.recorder.extend(self.run_id, grown)
            self.recorder.finish(self.run_id, self._end(summary))
        except Exception as exc:
            self._unstored.failed(exc)

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
