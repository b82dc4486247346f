"""The judge budget of a watch session: at most so many judge requests in any hour, never one more.

Online traffic does not stop, so the judge's spend must. The budget is the gate of the session's judge clients
(`CallGate`): each request is admitted just before it is sent, and the check and the count happen in one step of
the event loop (nothing awaits between them), so however many judge calls run at once the hour's count never
passes the budget. A request past it does not start:
the judge call fails with `CallRefused` (its verdict is inconclusive, never failed, with this reason), and a
verdict already in the cache still answers, since a cache hit sends nothing. A request is counted whether its
answer came or not (it was sent); one refused, or without a key, is not.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from niceeval.judge._runtime import CallRefused
from niceeval.providers import Provider

HOUR = 3600.0
SPENT = "the judge budget"
"""How a refusal's reason begins (the watcher notes the runs whose judges were refused)."""


class JudgeBudget:
    """Judge requests per rolling hour (None: no budget)."""

    def __init__(self, per_hour: int | None, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_hour = per_hour
        self.refused = 0
        self._clock = clock
        self._sent: deque[float] = deque()

    @property
    def spent(self) -> int:
        """Judge requests sent in the last hour."""
        horizon = self._clock() - HOUR
        while self._sent and self._sent[0] <= horizon:
            self._sent.popleft()
        return len(self._sent)

    def admit(self, provider: Provider) -> None:
        """Count one request to `provider` about to be sent.

        Raises:
            CallRefused: The last hour's requests already reach the budget.
        """
        if self.per_hour is not None and self.spent >= self.per_hour:
            self.refused += 1
            raise CallRefused("rate_limited", self.reason())
        self._sent.append(self._clock())

    def reason(self) -> str:
        """Why a judge request did not start."""
        return (
            f"{SPENT} ({self.per_hour} calls an hour) is spent: this judge call did not start (a verdict in the cache "
            "still answers; raise the budget with --judge-budget)"
        )

    def note(self) -> str:
        """The warning on a run whose judges were refused."""
        return (
            f"{SPENT} ({self.per_hour} calls an hour) was spent: this run's judge calls past it did not start and "
            "their verdicts are inconclusive (raise it with --judge-budget)"
        )
