"""`t.check`, `t.require`, `t.group` and `t.skip` (the `Checks` part of the context), what they return, and the
exceptions that end an eval early.

Apart from the context so that the conversation (whose turns record checks) and the context both build on it
without importing each other.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

import anyio

from niceeval._core.assertion import CURRENT_GROUP, AssertionResult, Matcher, ScoreLike, grouped
from niceeval._core.errors import ErrorInfo, UsageError, caller_location, error_info
from niceeval._core.values import short
from niceeval._eval.points import awarded, check_points

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from niceeval._core.threads import Portal


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


Work = Callable[[], Coroutine[Any, Any, None]]
"""Background work of a run: an async matcher settling, a judge call."""
Starter = Callable[[Work], object]
"""Starts work on the run's task group (from a sync eval's thread, it hops into the loop first)."""

NO_VALUE: Any = object()
"""`t.check()` called without the value to score."""


class CheckState(Protocol):
    """What the checks record into: the run's `RunState`."""

    assertions: list[AssertionResult]
    pending_requires: list[Check]
    """Handles of `t.require` with an async matcher, checked for an `await` once the eval returns."""
    skip_reason: str | None
    usage_error: ErrorInfo | None
    """An author bug found inside a background check (it cannot raise into the eval function)."""
    points_possible: float | None
    """The eval's `points=` (a score eval), None otherwise: what `.points(n)` checks and `t.score` may earn."""


class Checks:
    """`t.check`, `t.require`, `t.group` and `t.skip`: score a value now and record it in the run's state.

    A matcher whose score is awaitable settles apart: `AsyncChecks` on the run's task group while the eval goes
    on, `BlockingChecks` (plain `def` evals) in the eval's thread, waiting through the loop's portal.
    """

    __slots__ = ("_state",)

    def __init__(self, state: CheckState) -> None:
        self._state = state

    def check(self, value: Any = NO_VALUE, matcher: Matcher | None = None, /) -> Check:
        """Score `value` with `matcher` and record it; the eval goes on whatever the result."""
        _needs_value(value, "check")
        return self.record(value, matcher, caller_location(1), required=False, verb="check")

    def require(self, value: Any = NO_VALUE, matcher: Matcher | None = None, /) -> Check:
        """Like `check`, but a miss stops the eval (as a failed gate)."""
        _needs_value(value, "require")
        return self.record(value, matcher, caller_location(1), required=True, verb="require")

    @contextmanager
    def group(self, name: str) -> Iterator[None]:
        """Name the assertions made inside the block `name › assertion` (groups nest)."""
        if not isinstance(name, str) or not name.strip():
            raise UsageError(f"t.group() at {caller_location(2)} needs a name, e.g. with t.group('checkout'): ...")
        token = CURRENT_GROUP.set((*CURRENT_GROUP.get(), name.strip()))
        try:
            yield
        finally:
            CURRENT_GROUP.reset(token)

    def score(self, points: float, label: str) -> None:
        """Award `points` (zero or more) in a score eval (`define_eval(points=N)`), recorded as `label`."""
        result = awarded(points, label, caller_location(1))
        check_points([*self._state.assertions, result], self._state.points_possible, result)
        self._state.assertions.append(result)

    def skip(self, reason: str) -> NoReturn:
        """Stop the eval and mark it `skipped` (unless a gate already failed)."""
        self._state.skip_reason = str(reason)
        raise Skipped(str(reason))

    def record(self, value: Any, matcher: Matcher | None, location: str | None, *, required: bool, verb: str) -> Check:
        """Score `value` with `matcher` and record the result made at `location` (`verb` names the call in errors)."""
        if inspect.isawaitable(value):
            _refuse_awaitable(value, location, verb)
        if not isinstance(matcher, Matcher):
            what = "no matcher" if matcher is None else f"{short(matcher)}, which is not a matcher"
            raise UsageError(
                f"t.{verb}() at {location} was given {what}. Pass one from niceeval.expect, "
                f"e.g. t.{verb}(t.reply, includes('refund'))."
            )
        if required:
            matcher = matcher.gate()
        if CURRENT_GROUP.get():
            matcher = matcher._chained(name=grouped(matcher.name))
        handle = Check(location, required=required)
        try:
            raw = matcher.score_fn(value)
        except Exception as exc:
            return self._finish(handle, matcher.crashed(exc, location), required)
        if inspect.isawaitable(raw):
            return self._pending(handle, matcher, raw, location, required)
        return self._finish(handle, matcher.result(raw, location), required)

    def _finish(self, handle: Check, result: AssertionResult, required: bool) -> Check:
        self._state.assertions.append(result)
        handle._resolve(result)
        check_points(self._state.assertions, self._state.points_possible, result)
        if required and result.state == "failed":
            raise RequireFailed(result)
        return handle

    def _pending(
        self, handle: Check, matcher: Matcher, raw: Awaitable[ScoreLike], location: str | None, required: bool
    ) -> Check:
        raise NotImplementedError


class AsyncChecks(Checks):
    """An `async def` eval's checks: an async matcher settles on the run's task group; `await` the handle for it."""

    __slots__ = ("_start",)

    def __init__(self, state: CheckState, start: Starter) -> None:
        super().__init__(state)
        self._start = start

    def _pending(
        self, handle: Check, matcher: Matcher, raw: Awaitable[ScoreLike], location: str | None, required: bool
    ) -> Check:
        state = self._state

        async def settle() -> None:
            try:
                result = matcher.result(await raw, location)
            except UsageError as exc:
                state.usage_error = error_info(exc)
                result = matcher.crashed(exc, location)
            except Exception as exc:
                result = matcher.crashed(exc, location)
            state.assertions.append(result)
            handle._resolve(result)
            try:
                check_points(state.assertions, state.points_possible, result)
            except UsageError as exc:
                state.usage_error = state.usage_error or error_info(exc)

        self._start(settle)
        if required:
            state.pending_requires.append(handle)
        return handle


class BlockingChecks(Checks):
    """A plain `def` eval's checks: an async matcher is awaited in the loop while the eval's thread waits."""

    __slots__ = ("_portal",)

    def __init__(self, state: CheckState, portal: Portal) -> None:
        super().__init__(state)
        self._portal = portal

    def _pending(
        self, handle: Check, matcher: Matcher, raw: Awaitable[ScoreLike], location: str | None, required: bool
    ) -> Check:
        async def wait() -> ScoreLike:
            return await raw

        try:
            result = matcher.result(self._portal.call(wait), location)
        except UsageError:
            raise
        except Exception as exc:
            result = matcher.crashed(exc, location)
        return self._finish(handle, result, required)


def thread_starter(portal: Portal, task_group: TaskGroup) -> Starter:
    """How a sync eval's thread starts work on the run's task group: by hopping into the loop through `portal`."""

    def start(work: Work) -> None:
        async def spawn() -> None:
            task_group.start_soon(work)

        portal.call(spawn)

    return start


def _needs_value(value: object, verb: str) -> None:
    if value is NO_VALUE:
        raise UsageError(
            f"t.{verb}() needs the value to score and a matcher, e.g. t.{verb}(t.reply, includes('refund'))."
        )


def _refuse_awaitable(value: Any, location: str | None, verb: str) -> NoReturn:
    if inspect.iscoroutine(value):
        value.close()  # it will never run: say so here, not in a RuntimeWarning at garbage collection
        given = f"the coroutine {value.__qualname__}(...)"
    else:
        given = f"an awaitable {type(value).__name__}"
    raise UsageError(
        f"t.{verb}() at {location} was given {given} instead of its value: add await, "
        f"e.g. t.{verb}(await t.sandbox.exists('app.py'), equals(True))."
    )
