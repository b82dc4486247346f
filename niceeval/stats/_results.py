"""What the statistics return: small frozen records that say plainly when there is not enough data."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Estimate:
    """A rate or mean with its uncertainty.

    `value` is the point estimate (None when there is nothing to estimate); `low`/`high` bound the interval at
    `confidence`; `stderr` is the standard error (None for one eval's Wilson interval over its runs; for a
    suite's pass rate, `sqrt(p(1-p) / effective runs)`). `n` counts the observations, `clusters` the independent
    groups they came in (cases, or a coarser key).
    `note` says in plain words why the interval is missing or why it is this wide, e.g. "1 case: no spread to
    measure".
    """

    value: float | None
    low: float | None = None
    high: float | None = None
    stderr: float | None = None
    n: int = 0
    clusters: int = 0
    confidence: float = 0.95
    note: str | None = None

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    def __str__(self) -> str:
        if self.value is None:
            return self.note or "no data"
        if self.low is None or self.high is None:
            return f"{self.value:.2f} ({self.note})" if self.note else f"{self.value:.2f}"
        return f"{self.value:.2f} ({self.confidence:.0%} {self.low:.2f}-{self.high:.2f})"


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """The change from `before` to `after` and the evidence for it.

    `difference` is after minus before (negative: a drop), with its interval `low`..`high` when the test gives
    one. `p_value` is the two-sided p-value of "no change"; it is None, and `note` says why, when no possible
    outcome on this much data could reach `alpha` (e.g. "2 shared cases: not enough to tell").
    """

    test: str
    n: int
    difference: float | None
    low: float | None = None
    high: float | None = None
    p_value: float | None = None
    alpha: float = 0.05
    note: str | None = None
    unchanged: bool = False
    """Every paired case came out the same on both sides: no change was observed, whatever the interval leaves
    possible for the true change (11 cases passing on both sides: -26 to +26 points)."""

    @property
    def enough_data(self) -> bool:
        return self.p_value is not None

    @property
    def significant(self) -> bool:
        """The change is unlikely to be noise at `alpha` (two-sided)."""
        return self.p_value is not None and self.p_value < self.alpha

    @property
    def regression(self) -> bool:
        """A significant drop."""
        return self.significant and self.difference is not None and self.difference < 0

    def __str__(self) -> str:
        if self.difference is None:
            return self.note or "nothing to compare"
        text = f"{self.difference:+.2f}"
        if self.low is not None and self.high is not None:
            text += f" (95% {self.low:+.2f} to {self.high:+.2f})"
        if self.p_value is None:
            return f"{text}, {self.note}" if self.note else text
        return f"{text}, p={self.p_value:.3g} ({self.test})"


@dataclass(frozen=True, kw_only=True)
class Power:
    """What a suite of this size and noise can detect (two-sided test at `alpha`, with power `power`).

    `detectable_drop`: the smallest drop in pass rate detected with that chance. When `detect` was given:
    `cases_needed` at the current runs per case, and `runs_needed` at the current number of cases (None when
    more runs alone can never get there: then more cases are needed). `note` explains a missing number.
    """

    cases: int
    runs: int
    pass_rate: float | None
    run_to_run_variance: float | None
    detectable_drop: float | None
    alpha: float = 0.05
    power: float = 0.8
    detect: float | None = None
    cases_needed: int | None = None
    runs_needed: int | None = None
    note: str | None = None
