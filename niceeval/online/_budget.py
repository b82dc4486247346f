"""The judge budget of a watch session: at most so many judge calls in any hour.

Online traffic does not stop, so the judge's spend must: once the last hour's calls reach the budget, the online
evals that run go on, but their judges answer only from the verdict cache (a verdict not there is inconclusive,
never failed) until the oldest calls leave the hour.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

HOUR = 3600.0


class JudgeBudget:
    """Judge calls per rolling hour (None: no budget)."""

    def __init__(self, per_hour: int | None, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_hour = per_hour
        self._clock = clock
        self._calls: deque[tuple[float, int]] = deque()
        self._spent = 0

    @property
    def spent(self) -> int:
        """Judge calls made in the last hour."""
        horizon = self._clock() - HOUR
        while self._calls and self._calls[0][0] <= horizon:
            self._spent -= self._calls.popleft()[1]
        return self._spent

    def open(self) -> bool:
        """Whether the next eval's judges may call their models."""
        return self.per_hour is None or self.spent < self.per_hour

    def charge(self, calls: int) -> None:
        """Count `calls` judge calls made now."""
        if calls > 0:
            self._calls.append((self._clock(), calls))
            self._spent += calls

    def note(self) -> str:
        """The warning on a run scored while the budget was spent."""
        return (
            f"the judge budget ({self.per_hour} calls an hour) was spent: this run's judges answered from the verdict "
            "cache only, and a verdict not there is inconclusive (raise it with --judge-budget)"
        )
