"""One line for a comparison: better, worse, a trade-off, or within noise, over every measure it weighed.

Each measure (pass rate, a mean score, cost, latency) brings the interval of its change and which way is worse. A
measure is better or worse only when its whole interval lies on that side of zero; an interval that reaches zero,
or crosses it, is within noise. So "better" is never claimed from a point estimate: every measure called better
has its interval clear of zero, and none is worse.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Direction = Literal["better", "worse", "noise", "unchanged"]
VerdictKind = Literal["better", "worse", "a trade-off", "within noise"]


@dataclass(frozen=True, kw_only=True)
class Dimension:
    """One measure of a comparison: the interval of its change (after minus before) and which way is worse."""

    name: str
    """As the verdict names it: `pass rate`, `cost`, `p95 latency`."""
    low: float | None
    high: float | None
    worse_when: Literal["up", "down"]
    """`down` for a pass rate or a score, `up` for cost and latency."""
    shown: str
    """The change in words for the verdict line: `+100%, 95% CI +90% to +110%`."""
    estimate: float | None = None
    """The change itself (after minus before), when known: which side a measure within noise leans to."""
    unchanged: bool = False
    """Every case came out the same on both sides (`Comparison.unchanged`), whatever its interval."""

    @property
    def direction(self) -> Direction:
        """`better`/`worse` when the whole interval lies on that side of zero, `unchanged` when it is zero itself
        (every case the same on both sides), else `noise`."""
        if self.unchanged:
            return "unchanged"
        if self.low is None or self.high is None:
            return "noise"
        if self.low == self.high == 0:
            return "unchanged"
        up, down = self.low > 0, self.high < 0
        if not up and not down:
            return "noise"
        return "worse" if up == (self.worse_when == "up") else "better"


@dataclass(frozen=True, kw_only=True)
class Verdict:
    kind: VerdictKind
    text: str
    """`worse on cost (+100%, 95% CI +90% to +110%); within noise: pass rate, p95 latency`."""


def verdict(dimensions: Sequence[Dimension]) -> Verdict:
    """The comparison in one line: `worse` when some measure is worse and none better, `better` the other way
    round, `a trade-off` when some are better and some worse, `within noise` when none is either."""
    better = [d for d in dimensions if d.direction == "better"]
    worse = [d for d in dimensions if d.direction == "worse"]
    parts = [f"better on {_listed(better)}"] if better else []
    parts += [f"worse on {_listed(worse)}"] if worse else []
    for direction, label in (("noise", "within noise"), ("unchanged", "unchanged")):
        names = [d.name for d in dimensions if d.direction == direction]
        parts += [f"{label}: {', '.join(names)}"] if names else []
    text = "; ".join(parts) or "nothing to weigh"
    if better and worse:
        return Verdict(kind="a trade-off", text=f"a trade-off: {text}")
    return Verdict(kind="better" if better else "worse" if worse else "within noise", text=text)


def _listed(dimensions: Sequence[Dimension]) -> str:
    return ", ".join(f"{d.name} ({d.shown})" for d in dimensions)
