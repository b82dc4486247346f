"""`JudgeHandle`: what every `t.judge...` call returns. Chainable like a scoped assertion, awaitable like a check."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Self

import anyio

from niceeval._core.assertion import AssertionResult, Chainable, Severity
from niceeval._core.errors import UsageError
from niceeval.judge._ruling import Ruling


class JudgeHandle(Chainable):
    """A judge verdict on its way: the request started when the judge method was called.

    Chain `.at_least(x)`, `.gate()`, `.label(text)`, `.optional()` to change how the verdict counts; they change
    this handle and apply whenever the verdict settles, as long as they are called before the eval returns.
    `await handle` waits for the verdict and returns the `AssertionResult` (as chained so far) without waiting
    for the eval to end. The result is recorded with the run either way; awaiting is never required.
    """

    __slots__ = (
        "name",
        "severity",
        "threshold",
        "is_optional",
        "key_id",
        "expected",
        "actual",
        "location",
        "note",
        "_ruling",
        "_done",
    )

    def __init__(
        self,
        *,
        name: str,
        threshold: float | None,
        expected: str | None,
        actual: str | None,
        location: str | None,
        note: str = "",
    ) -> None:
        self.name = name
        self.severity: Severity = "soft"
        self.threshold = threshold
        """None for a judge with a pass flag and no threshold set: its pass decides (recorded as threshold 0)."""
        self.is_optional = False
        self.key_id: str | None = None
        self.expected = expected
        self.actual = actual
        self.location = location
        self.note = note
        """Said after the verdict's reason, in brackets: how the judged data was cut to fit the prompt's cap."""
        self._ruling: Ruling | None = None
        self._done: anyio.Event | None = None  # made on first await, in the event loop

    def _chained(self, **changes: Any) -> Self:
        for name, value in changes.items():
            setattr(self, name, value)
        return self

    @property
    def done(self) -> bool:
        """True once the verdict has settled."""
        return self._ruling is not None

    @property
    def result(self) -> AssertionResult:
        """The verdict as an assertion result; raises while it is still running (`await` the handle instead)."""
        if self._ruling is None:
            raise UsageError(f"the judge call at {self.location} is still running; `await` it to read its verdict.")
        return self._build(self._ruling)

    def __await__(self) -> Generator[Any, Any, AssertionResult]:
        return self._wait().__await__()

    async def _wait(self) -> AssertionResult:
        if self._ruling is None:
            self._done = self._done or anyio.Event()
            await self._done.wait()
        return self.result

    def _settle(self, ruling: Ruling) -> None:
        self._ruling = ruling
        if self._done is not None:
            self._done.set()

    def final(self) -> AssertionResult:
        """The result to record when the run is folded; inconclusive (`timeout`) if the run ended first."""
        if self._ruling is not None:
            return self._build(self._ruling)
        return AssertionResult(
            name=self.name,
            severity=self.severity,
            score=None,
            threshold=self.threshold or 0.0,
            state="inconclusive",
            reason=self._noted("the run ended (timeout or error) before the judge answered"),
            expected=self.expected,
            actual=self.actual,
            location=self.location,
            optional=self.is_optional,
            cause="timeout",
            key=self.key_id,
        )

    def _build(self, ruling: Ruling) -> AssertionResult:
        settled = ruling.settle(self.threshold)
        return AssertionResult(
            name=self.name,
            severity=self.severity,
            score=settled.score,
            threshold=self.threshold or 0.0,
            state=settled.state,
            reason=self._noted(settled.reason),
            expected=self.expected,
            actual=self.actual,
            location=self.location,
            optional=self.is_optional,
            cause=settled.cause,
            judge_calls=ruling.calls,
            key=self.key_id,
            unstable=settled.unstable,
        )

    def _noted(self, reason: str) -> str:
        return f"{reason} ({self.note})" if self.note else reason
