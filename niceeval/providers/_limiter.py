"""How many requests a provider takes at once: one adaptive limiter per provider and event loop, steered by 429s."""

from __future__ import annotations

import weakref
from collections.abc import MutableMapping

import anyio
import anyio.lowlevel


class AdaptiveLimiter:
    """Concurrency for one provider, steered by its 429s.

    - A 429 halves the limit once per burst: the requests already in flight when the limit was cut answer from
      before the cut, and their 429s say nothing new (`epoch` tells them apart). The limit never goes below
      `floor` (a quarter of the ceiling up to 8): a provider that rate-limits a share of requests is still
      served by several at once, each retrying when told.
    - A 429's `Retry-After` is when the provider takes requests again: no new request starts before it.
    - After `grow_after` successes in a row the limit grows by a quarter (at least one), so it is back at the
      ceiling within seconds of the 429s stopping.
    """

    def __init__(self, ceiling: int, *, grow_after: int = 4, floor: int | None = None) -> None:
        self.ceiling = ceiling
        self.floor = max(1, min(ceiling, floor if floor is not None else min(8, ceiling // 4)))
        self._limiter = anyio.CapacityLimiter(ceiling)
        self._grow_after = grow_after
        self._successes = 0
        self.epoch = 0
        """Counts the cuts; a request notes it when it starts (see `rate_limited`)."""
        self._resume_at = 0.0

    @property
    def limit(self) -> int:
        """Requests that may be in flight now."""
        return int(self._limiter.total_tokens)

    async def __aenter__(self) -> None:
        while self._resume_at and (wait := self._resume_at - anyio.current_time()) > 0:
            await anyio.sleep(wait)
        try:  # a free slot is taken at once: `acquire()` would pass through the event loop first, every time
            self._limiter.acquire_nowait()
        except anyio.WouldBlock:
            await self._limiter.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self._limiter.release()

    def rate_limited(self, epoch: int | None = None, retry_after: float | None = None) -> None:
        """A 429 for a request started in `epoch` (None: cut anyway), asking to wait `retry_after` seconds."""
        self._successes = 0
        if retry_after is not None and self.limit <= self.floor:
            self._resume_at = max(self._resume_at, anyio.current_time() + retry_after)
        if epoch is not None and epoch != self.epoch:
            return  # the limit was cut since this request started: its 429 is from the same burst
        self.epoch += 1
        self._limiter.total_tokens = max(self.floor, self.limit // 2)

    def succeeded(self) -> None:
        """A request got its answer: after `grow_after` in a row, the limit grows back toward the ceiling."""
        self._successes += 1
        if self._successes >= self._grow_after and self.limit < self.ceiling:
            self._successes = 0
            self._limiter.total_tokens = min(self.ceiling, self.limit + max(1, self.limit // 4))


_limiters: MutableMapping[object, dict[str, AdaptiveLimiter]] = weakref.WeakKeyDictionary()


def limiter_for(provider: str, *, ceiling: int = 64) -> AdaptiveLimiter:
    """The limiter shared by every agent and judge call to `provider` in this event loop.

    Kept per event loop: a limiter belongs to the loop it waits in, and tests (or scripts) may run several.
    """
    per_loop = _limiters.setdefault(anyio.lowlevel.current_token().native_token, {})
    if provider not in per_loop:
        per_loop[provider] = AdaptiveLimiter(ceiling)
    return per_loop[provider]
