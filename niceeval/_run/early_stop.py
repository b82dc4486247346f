"""When a suite stops starting runs early: `--budget USD` reached, or `-x/--exitfirst` after the first failed eval.

Runs already under way finish and are reported (nothing computed is lost); the runs never started are counted,
and the summary says why the suite stopped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from niceeval._core.results import RunResult, Spend
from niceeval._core.summary import EvalTally, Problem, SuiteSummary
from niceeval._run.discovery import EvalEntry


@dataclass(kw_only=True, slots=True)
class RunControl:
    """Decides, after each finished run, whether new runs may start.

    Attributes:
        budget: `--budget USD`: agent + judge spend at which no new run starts.
        exitfirst: `-x/--exitfirst`: no new run starts once an eval has failed.
    """

    budget: float | None = None
    exitfirst: bool = False
    early_exit: bool = False
    """An experiment's `early_exit`: an eval's attempts stop at its first pass (they run one after another)."""
    settled: set[str] = field(default_factory=set)
    """With `early_exit`: the evals that passed once, whose remaining attempts are not needed."""
    spent: Spend | None = None
    stopped: str | None = None
    """Why no new run starts, once decided."""
    not_started: int = 0
    """Runs left out because the suite stopped."""

    def runs(self, queue: Iterator[tuple[EvalEntry, list[int]]]) -> Iterator[tuple[EvalEntry, int]]:
        """One worker's runs from the shared `queue`, until the suite stops (an item's runs stay together)."""
        while self.stopped is None and (item := next(queue, None)) is not None:
            entry, indices = item
            for position, index in enumerate(indices):
                if entry.id in self.settled:
                    break
                if self.stopped is not None:
                    self.not_started += len(indices) - position
                    break
                yield entry, index

    def count_left(self, queue: Iterator[tuple[EvalEntry, list[int]]]) -> None:
        """Count the runs no worker took (the queue is drained)."""
        self.not_started += sum(len(indices) for _, indices in queue)

    def settle(self, result: RunResult, tally: EvalTally) -> None:
        """With `early_exit`: an eval's first pass settles it; its planned runs drop to those made, before any
        reporter sees the run (reporters that wait for an eval's last run then print it)."""
        if self.early_exit and result.outcome == "passed" and tally.eval.id not in self.settled:
            self.settled.add(tally.eval.id)
            tally.eval.runs = tally.done

    def after(self, result: RunResult, tally: EvalTally, summary: SuiteSummary) -> Problem | None:
        """Take the finished `result` (already added to its `tally`) into account; a problem to report, if any."""
        self.settle(result, tally)
        if self.stopped is not None:
            return None
        if self.budget is not None:
            problem = self._spend(result)
            if problem is not None or self.stopped is not None:
                return problem
        if self.exitfirst and tally.done >= tally.eval.runs and summary.status_of(tally) == "failed":
            self.stopped = f"stopped after the first failed eval ({tally.eval.id}) (-x/--exitfirst)"
        return None

    def _spend(self, result: RunResult) -> Problem | None:
        run_spend = result.agent_spend + result.judge_spend
        self.spent = run_spend if self.spent is None else self.spent + run_spend
        if self.spent.cost is None:
            models = ", ".join(self.spent.unpriced) or "a model"
            first = self.spent.unpriced[0] if self.spent.unpriced else "provider/model"
            self.stopped = f"--budget cannot be kept: no price for {models}"
            example = f"define_config(pricing={{{first!r}: {{'input_per_mtok': 0.15, 'output_per_mtok': 0.6}}}})"
            return Problem(
                location=f"{result.file}:{result.line}",
                message=(
                    f"--budget needs a price for every model in use, and {models} has none: price it in "
                    f"niceeval.config.py, e.g. {example} (USD per million tokens). No new run was started."
                ),
            )
        assert self.budget is not None
        if self.spent.cost >= self.budget:
            self.stopped = f"budget ${self.budget:g} reached (${self.spent.cost:.4f} spent on agent and judges)"
        return None
