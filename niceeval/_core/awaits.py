"""Coroutines from niceeval's API that were never awaited: an author error, not a silent no-op.

`t.sandbox.write_text(...)` without `await` writes nothing, and Python says so only with a RuntimeWarning when
the coroutine is garbage-collected (often never shown). Every coroutine niceeval's API hands to user code during
a run goes through `tracked()`, which remembers it with the caller's file:line; after the eval, the runner asks
for those never started (`AwaitTracker.never_awaited`), closes them (no RuntimeWarning) and fails the run with a
usage error that says "add await".
"""

from __future__ import annotations

import inspect
from collections.abc import Coroutine
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from niceeval._core.errors import caller_location

T = TypeVar("T")
_PRUNE_AT = 256
"""Tracked coroutines kept before the finished ones are dropped (an eval may call the API thousands of times)."""


@dataclass(frozen=True, slots=True)
class Unawaited:
    """A coroutine from the API that never ran: what made it, and where."""

    what: str
    location: str | None

    def message(self) -> str:
        where = f" at {self.location}" if self.location else ""
        return f"{self.what}{where} was never awaited, so it did nothing: add await (`await {self.what}`)."


class AwaitTracker:
    """The coroutines one run's API calls made, checked once the eval returns."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: list[tuple[Coroutine[Any, Any, Any], Unawaited]] = []

    def track(self, coro: Coroutine[Any, Any, T], what: str, location: str | None) -> Coroutine[Any, Any, T]:
        if len(self._pending) >= _PRUNE_AT:
            self._pending = [(c, u) for c, u in self._pending if _never_started(c)]
        self._pending.append((coro, Unawaited(what, location)))
        return coro

    def unstarted(self) -> Unawaited | None:
        """The first tracked coroutine not started yet (it is kept: `never_awaited` still closes it)."""
        return next((unawaited for coro, unawaited in self._pending if _never_started(coro)), None)

    def never_awaited(self) -> list[Unawaited]:
        """The tracked coroutines never started, each closed (so Python does not warn about it later)."""
        found = []
        for coro, unawaited in self._pending:
            if _never_started(coro):
                coro.close()
                found.append(unawaited)
        self._pending.clear()
        return found


def _never_started(coro: Coroutine[Any, Any, Any]) -> bool:
    return inspect.getcoroutinestate(coro) == inspect.CORO_CREATED


CURRENT_TRACKER: ContextVar[AwaitTracker | None] = ContextVar("niceeval_await_tracker", default=None)


def tracked(coro: Coroutine[Any, Any, T], what: str) -> Coroutine[Any, Any, T]:
    """`coro`, remembered by the current run (if any) with the user's file:line, to be checked for an `await`."""
    tracker = CURRENT_TRACKER.get()
    if tracker is None:
        return coro
    return tracker.track(coro, what, caller_location(1))
