"""The eval context `t`: what an eval function uses to talk to the agent and record assertions."""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Awaitable, Generator
from dataclasses import dataclass, field
from typing import Any, NoReturn

import anyio
import anyio.from_thread
from anyio.abc import TaskGroup

from niceeval._core.assertion import AssertionResult, Matcher, ScoreLike
from niceeval._core.errors import ErrorInfo, UsageError, caller_location, error_info
from niceeval._core.events import Event, EventLog, MessageEvent
from niceeval._diff import short
from niceeval.agents import Agent, AgentSession, FunctionAgent, TurnStatus


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


@dataclass(frozen=True, kw_only=True, slots=True)
class Turn:
    """One exchange with the agent: what it answered, its structured data, and what happened meanwhile."""

    message: str
    """The agent's reply text."""
    data: Any = None
    """Structured reply (a pydantic model, dict or list) when the agent returned one."""
    events: tuple[Event, ...] = ()
    """The events emitted during this turn, in order."""
    status: TurnStatus = "completed"


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


@dataclass(kw_only=True)
class RunState:
    """Everything one run accumulates; the runner folds it into a `RunResult`."""

    assertions: list[AssertionResult] = field(default_factory=list)
    log: EventLog = field(default_factory=EventLog)
    pending_requires: list[Check] = field(default_factory=list)
    skip_reason: str | None = None
    usage_error: ErrorInfo | None = None
    """An author bug found inside a background check (it cannot raise into the eval function)."""


class _ContextBase:
    """What sync and async eval contexts share: checks, skip, the reply, the event stream."""

    def __init__(self, *, state: RunState, task_group: TaskGroup, agent: object, eval_id: str) -> None:
        self._state = state
        self._tg = task_group
        self._agent_spec = agent
        self._session: AgentSession | None = None
        self._eval_id = eval_id
        self._reply = ""

    @property
    def reply(self) -> str:
        """The agent's last reply text ("" before the first `send`)."""
        return self._reply

    @property
    def events(self) -> list[Event]:
        """The run's event stream so far."""
        return self._state.log.events

    def check(self, value: Any, matcher: Matcher | None = None, /) -> Check:
        """Score `value` with `matcher` and record it; the eval goes on whatever the result."""
        return self._record(value, matcher, caller_location(1), required=False, verb="check")

    def require(self, value: Any, matcher: Matcher | None = None, /) -> Check:
        """Like `check`, but a miss stops the eval (as a failed gate): use it for preconditions.

        With an async matcher, write `await t.require(...)`.
        """
        return self._record(value, matcher, caller_location(1), required=True, verb="require")

    def skip(self, reason: str) -> NoReturn:
        """Stop the eval and mark it `skipped` (unless a gate already failed)."""
        self._state.skip_reason = str(reason)
        raise Skipped(str(reason))

    def _record(
        self, value: Any, matcher: Matcher | None, location: str | None, *, required: bool, verb: str
    ) -> Check:
        if not isinstance(matcher, Matcher):
            what = "no matcher" if matcher is None else f"{short(matcher)}, which is not a matcher"
            raise UsageError(
                f"t.{verb}() at {location} was given {what}. Pass one from niceeval.expect, "
                f"e.g. t.{verb}(t.reply, includes('refund'))."
            )
        if required:
            matcher = matcher.gate()
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
        if required and result.state == "failed":
            raise RequireFailed(result)
        return handle

    def _pending(
        self, handle: Check, matcher: Matcher, raw: Awaitable[ScoreLike], location: str | None, required: bool
    ) -> Check:
        async def settle() -> None:
            try:
                result = matcher.result(await raw, location)
            except UsageError as exc:
                self._state.usage_error = error_info(exc)
                result = matcher.crashed(exc, location)
            except Exception as exc:
                result = matcher.crashed(exc, location)
            self._state.assertions.append(result)
            handle._resolve(result)

        self._tg.start_soon(settle)
        if required:
            self._state.pending_requires.append(handle)
        return handle

    def _agent(self) -> Agent:
        spec = self._agent_spec
        if spec is None:
            raise UsageError(
                "t.send() needs an agent: set `agent=` in niceeval.config.py (define_config(agent=my_fn)) "
                "or on the eval (@define_eval(agent=my_fn))."
            )
        if isinstance(spec, Agent):
            return spec
        if not callable(spec):
            raise UsageError(f"the agent must be a function or an agent adapter, got {short(spec)}.")
        return FunctionAgent(spec)

    async def _send(self, text: str, output: type[Any] | None) -> Turn:
        if not isinstance(text, str):
            raise UsageError(f"t.send() takes the message as a string, got {type(text).__name__}.")
        if self._session is None:
            self._session = await self._agent().open(f"{self._eval_id}#{uuid.uuid4().hex[:8]}", self._state.log)
        start = len(self._state.log.events)
        reply = await self._session.send(text, output=output)
        self._reply = reply.text
        return Turn(
            message=reply.text,
            data=reply.data,
            events=tuple(self._state.log.events[start:]),
            status=reply.status,
        )

    async def _close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    def _messages(self) -> list[MessageEvent]:
        return [e for e in self._state.log.events if isinstance(e, MessageEvent)]


class EvalContext(_ContextBase):
    """The context `t` given to an `async def` eval."""

    async def send(self, text: str, *, output: type[Any] | None = None) -> Turn:
        """Send `text` to the agent under test (continuing the same conversation) and return its turn."""
        return await self._send(text, output)


class SyncEvalContext(_ContextBase):
    """The context `t` given to a plain `def` eval (which runs in a worker thread)."""

    def send(self, text: str, *, output: type[Any] | None = None) -> Turn:
        """Send `text` to the agent under test (continuing the same conversation) and return its turn."""
        return anyio.from_thread.run(self._send, text, output)

    def _pending(
        self, handle: Check, matcher: Matcher, raw: Awaitable[ScoreLike], location: str | None, required: bool
    ) -> Check:
        async def wait() -> ScoreLike:
            return await raw

        try:
            result = matcher.result(anyio.from_thread.run(wait), location)
        except UsageError:
            raise
        except Exception as exc:
            result = matcher.crashed(exc, location)
        return self._finish(handle, result, required)
