"""Score evals (`define_eval(points=N)`): the points a run earned, `t.score(n, ...)`, and the limits on both.

A check with `.points(n)` earns its points unless it failed; `t.score(n, label)` awards `n` points outright. Both
are recorded as assertions carrying `points`, so the store, the reports and `niceeval diff` see them as any other
check. The run's result is the sum earned of the eval's points; earning more than the eval is out of is an author
error named at the call that went over.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from niceeval._core.assertion import AssertionResult
from niceeval._core.errors import UsageError

if TYPE_CHECKING:
    from niceeval._eval.spec import EvalSpec


@dataclass(frozen=True, kw_only=True, slots=True)
class PointsRule:
    """What a score eval is out of and what a run needs to pass (`define_eval(points=, points_to_pass=)`)."""

    possible: float
    to_pass: float | None = None
    """None: every point."""

    @property
    def needed(self) -> float:
        return self.possible if self.to_pass is None else self.to_pass

    def short(self, earned: float) -> bool:
        """Whether `earned` is too few points for the run to pass."""
        return earned + 1e-9 < self.needed


def earned(assertions: Iterable[AssertionResult]) -> float:
    """The points the assertions earned: each one's `points`, unless it failed (inconclusive earns, as it passes)."""
    return math.fsum(a.points for a in assertions if a.points is not None and a.state != "failed")


def check_points(assertions: list[AssertionResult], possible: float | None, result: AssertionResult) -> None:
    """Refuse `result` (just recorded) when the eval declares no points, or when it takes the run past them."""
    if result.points is None:
        return
    where = result.location or "an unknown line"
    if possible is None:
        raise UsageError(
            f"{where}: {result.name!r} is worth {result.points:g} point(s), but the eval is not a score eval; "
            "declare what it is out of, e.g. @define_eval(points=3)."
        )
    total = earned(assertions)
    if result.state != "failed" and total > possible + 1e-9:
        raise UsageError(
            f"{where}: {result.name!r} brings the points earned to {total:g}, more than the eval's points="
            f"{possible:g}; raise points= to the most a run can earn, or award fewer points."
        )


def awarded(points: object, label: object, location: str | None) -> AssertionResult:
    """The assertion `t.score(points, label)` records: `label`, passed, worth `points` (zero or more)."""
    if isinstance(points, bool) or not isinstance(points, int | float) or not math.isfinite(points) or points < 0:
        raise UsageError(
            f"t.score() at {location} takes the points earned, zero or more, then what they are for: "
            f"t.score(1, 'parses the file'); got {points!r}."
        )
    if not isinstance(label, str) or not label.strip():
        raise UsageError(
            f"t.score() at {location} needs what the points are for, e.g. t.score({points:g}, 'parses the file')."
        )
    return AssertionResult(
        name=label.strip(),
        severity="soft",
        score=1.0,
        threshold=0.0,
        state="passed",
        reason=f"awarded {points:g} point(s)",
        location=location,
        points=float(points),
    )


def points_rule(spec: EvalSpec) -> PointsRule | None:
    """The eval's points rule; None for a pass/fail eval."""
    if spec.points is None:
        return None
    return PointsRule(possible=spec.points, to_pass=spec.points_to_pass)
