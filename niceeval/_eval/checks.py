"""What `t.check` / `t.require` return, and the exceptions that end an eval early (`require`, `skip`).

Apart from the context so that the conversation (whose turns record checks) and the context both build on it
without importing each other.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import anyio

from niceeval._core.assertion import AssertionResult
from niceeval._core.errors import UsageError


class StopEval(BaseException):
    """Ends the eval function early. A BaseException so a user's `except Exception` cannot swallow it."""


class RequireFailed(StopEval):
    """A `t.require(...)` did not pass: the rest of the eval would be meaningless."""

    def __init__(self, result: AssertionResult) -> None:
        super().__init__(f"required assertion {result.name!r} did not pass")
        self.result = result


class Skipped(StopEval):
    """`t.skip(reason)` was called."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Check:
    """The handle `t.check` / `t.require` return: the result now, or (async matchers) once awaited."""

    __slots__ = ("_result", "_done", "_required", "_awaited", "location")

    def __init__(self, location: str | None, *, required: bool) -> None:
        self._result: AssertionResult | None = None
        self._done: anyio.Event | None = None  # made on first await: most checks resolve at once
        self._required = required
        self._awaited = False
        self.location = location

    def _resolve(self, result: AssertionResult) -> None:
        self._result = result
        if self._done is not None:
            self._done.set()

    @property
    def result(self) -> AssertionResult:
        """The recorded assertion; raises if an async matcher has not finished yet (await the handle)."""
        if self._result is None:
            raise UsageError(f"the check at {self.location} is still running; `await` it to read its result.")
        return self._result

    @property
    def passed(self) -> bool:
        """Whether the assertion passed (inconclusive counts as passed)."""
        return self.result.state != "failed"

    def __bool__(self) -> bool:
        return self.passed

    def __await__(self) -> Generator[Any, Any, AssertionResult]:
        return self._wait().__await__()

    async def _wait(self) -> AssertionResult:
        self._awaited = True
        if self._result is None:
            self._done = self._done or anyio.Event()
            await self._done.wait()
        assert self._result is not None
        if self._required and self._result.state == "failed":
            raise RequireFailed(self._result)
        return self._result
