"""The gate between two runs of a suite: which changes are evidence, which are noise.

Input is plain counts: for each eval, `(passes, runs)` on each side, already counted under one verdict rule by
the caller. Each shared eval gets Fisher's exact test on its runs; the q-values of Benjamini-Hochberg control
the false discovery rate across evals; the suite gets a paired test over the shared evals (McNemar when every
eval ran once on both sides, else a paired t test on the per-eval pass rates, clustered when keys are given).
The run regressed when an eval or the suite dropped significantly at `alpha`, or the suite's pass rate dropped
by more than `max_drop`.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Literal

from ._compare import benjamini_hochberg, compare_rates, mcnemar, paired_t
from ._intervals import clustered_mean
from ._results import Comparison, Estimate

Change = Literal["regression", "improvement", "noise", "unchanged"]


@dataclass(frozen=True, kw_only=True)
class EvalChange:
    """One shared eval: its passes/runs on each side, the exact test, and its false-discovery-adjusted q-value."""

    eval_id: str
    before: tuple[int, int]
    after: tuple[int, int]
    comparison: Comparison
    q_value: float | None

    @property
    def change(self) -> Change:
        """`regression`/`improvement` when significant after false discovery control, `noise` when the rate moved
        without evidence, `unchanged` when it did not move."""
        if self.comparison.difference == 0:
            return "unchanged"
        if self.q_value is None or self.q_value >= self.comparison.alpha:
            return "noise"
        return "regression" if (self.comparison.difference or 0) < 0 else "improvement"


@dataclass(frozen=True, kw_only=True)
class RunComparison:
    """Two runs compared: per-eval changes sorted by evidence, the suite's paired test, and the gate's verdict."""

    evals: list[EvalChange]
    suite: Comparison
    before_rate: Estimate
    after_rate: Estimate
    alpha: float
    max_drop: float | None

    @property
    def regressions(self) -> list[EvalChange]:
        return [change for change in self.evals if change.change == "regression"]

    @property
    def noise(self) -> list[EvalChange]:
        return [change for change in self.evals if change.change == "noise"]

    @property
    def reasons(self) -> list[str]:
        """Why the gate fails, in plain words (empty: it passes)."""
        reasons = [
            f"{change.eval_id}: {change.comparison} (q={change.q_value:.3g})"
            for change in self.regressions
            if change.q_value is not None
        ]
        if self.suite.regression:
            reasons.append(f"suite pass rate: {self.suite}")
        drop = self.suite.difference
        if self.max_drop is not None and drop is not None and -drop > self.max_drop + 1e-12:
            reasons.append(f"suite pass rate dropped by {-drop:.3f}, more than --max-drop {self.max_drop:g}")
        return reasons

    @property
    def regressed(self) -> bool:
        return bool(self.reasons)


def compare_runs(
    before: Mapping[str, tuple[int, int]],
    after: Mapping[str, tuple[int, int]],
    *,
    alpha: float = 0.05,
    max_drop: float | None = None,
    clusters: Mapping[str, Hashable] | None = None,
) -> RunComparison:
    """Compare the evals two runs share; raises ValueError when they share none (nothing to compare)."""
    shared = sorted(e for e in before.keys() & after.keys() if before[e][1] > 0 and after[e][1] > 0)
    if not shared:
        raise ValueError("the two runs share no eval with a counted run: nothing to compare")
    comparisons = [compare_rates(before[e], after[e], alpha=alpha) for e in shared]
    q_values = benjamini_hochberg([c.p_value for c in comparisons])
    changes = [
        EvalChange(eval_id=e, before=before[e], after=after[e], comparison=c, q_value=q)
        for e, c, q in zip(shared, comparisons, q_values, strict=True)
    ]
    changes.sort(key=_evidence)
    rates_before = [before[e][0] / before[e][1] for e in shared]
    rates_after = [after[e][0] / after[e][1] for e in shared]
    keys = [clusters.get(e, e) for e in shared] if clusters is not None else None
    if all(before[e][1] == 1 and after[e][1] == 1 for e in shared) and clusters is None:
        suite = mcnemar([r == 1 for r in rates_before], [r == 1 for r in rates_after], alpha=alpha)
    else:
        suite = paired_t(rates_before, rates_after, keys, alpha=alpha)
    if suite.low is not None and suite.high is not None:  # a change in pass rate lies within -1..1
        suite = replace(suite, low=max(-1.0, suite.low), high=min(1.0, suite.high))
    return RunComparison(
        evals=changes,
        suite=suite,
        before_rate=clustered_mean(rates_before, keys, bounds=(0.0, 1.0)),
        after_rate=clustered_mean(rates_after, keys, bounds=(0.0, 1.0)),
        alpha=alpha,
        max_drop=max_drop,
    )


def _evidence(change: EvalChange) -> tuple[float, float, str]:
    """Strongest evidence first: smallest q-value, then the largest move, then by id."""
    q = change.q_value if change.q_value is not None else 2.0
    return (q, -abs(change.comparison.difference or 0.0), change.eval_id)
