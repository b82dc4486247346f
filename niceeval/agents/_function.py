"""The simplest agent: a plain Python function (sync or async) from a message to a reply.

The function may take the session as a second argument and use its helpers to report what it did (tool calls,
subagent calls, input requests, token usage), so scoped assertions work on function agents too.
"""

from __future__ import annotations

import inspect
import json
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

from pydantic import BaseModel, TypeAdapter, ValidationError

from niceeval._core.awaits import tracked
from niceeval._core.errors import UsageError
from niceeval._core.events import (
    ActionCalledEvent,
    ErrorEvent,
    EventLog,
    InputRequestedEvent,
    MessageEvent,
    SubagentCalledEvent,
    UsageEvent,
)
from niceeval._core.threads import call_in_thread
from niceeval.agents._attachments import Attachment
from niceeval.agents._protocol import AgentReply, current_workspace

AgentFunction = Callable[..., Any]
T = TypeVar("T")


def _as_reply(value: object) -> AgentReply:
    if isinstance(value, AgentReply):
        return value
    if isinstance(value, str):
        return AgentReply(text=value)
    if isinstance(value, BaseModel):
        return AgentReply(text=value.model_dump_json(), data=value)
    if isinstance(value, dict | list):
        return AgentReply(text=json.dumps(value, default=str), data=value)
    if value is None:
        return AgentReply(text="")
    return AgentReply(text=str(value), data=value)


def structure(reply: AgentReply, output: type[Any] | None, log: EventLog) -> AgentReply:
    """Validate a reply against the structured `output` type asked for; a mismatch fails the turn, visibly."""
    if output is None:
        return reply
    source: Any = reply.data if reply.data is not None else reply.text
    adapter: TypeAdapter[Any] = TypeAdapter(output)
    try:
        data = adapter.validate_json(source) if isinstance(source, str) else adapter.validate_python(source)
    except ValidationError as exc:
        name = getattr(output, "__name__", str(output))
        log.emit(ErrorEvent(message=f"reply is not a valid {name}: {exc.errors()[:3]}", error_type="ValidationError"))
        return AgentReply(text=reply.text, data=None, status="failed")
    return AgentReply(text=reply.text, data=data, status=reply.status)


class FunctionSession:
    """A conversation with a function agent; the function may take it as a second argument."""

    def __init__(self, fn: AgentFunction, session_id: str, log: EventLog, history: list[MessageEvent]) -> None:
        self.id = session_id
        self.log = log
        self.history = history
        """The conversation so far (kept by the agent across `t.revive()`)."""
        self._fn = fn
        self._takes_session = len(inspect.signature(fn).parameters) >= 2
        self.files: list[Attachment] = []
        """The files sent with the current message (`t.send(..., files=[...])`): name, media_type, data, path."""

    async def send(
        self,
        message: str,
        *,
        output: type[Any] | None = None,
        files: Sequence[Attachment] = (),
        history: Sequence[dict[str, str]] | None = None,
    ) -> AgentReply:
        """Send `message`; with `history` (from `t.send([...messages])`) the function gets the whole list."""
        self.files = list(files)
        data: dict[str, Any] = {"files": [f.described() for f in files]} if files else {}
        if history is not None:
            data["history"] = list(history)
        user = MessageEvent(role="user", text=message, data=data or None)
        self.log.emit(user)
        self.history.append(user)
        given: Any = message if history is None else [*history, {"role": "user", "content": message}]
        reply = structure(_as_reply(await self._answer(given)), output, self.log)
        answer = MessageEvent(role="assistant", text=reply.text, data=reply.data)
        self.log.emit(answer)
        self.history.append(answer)
        return reply

    async def _answer(self, message: Any) -> Any:
        """What the function returns for `message` (awaited; a sync function runs in a thread)."""
        args: tuple[Any, ...] = (message, self) if self._takes_session else (message,)
        if inspect.iscoroutinefunction(self._fn):
            raw = await self._fn(*args)
        else:
            raw = await call_in_thread(lambda: self._fn(*args))
        if inspect.isawaitable(raw):
            raw = await raw
        return raw

    async def close(self) -> None:
        """Nothing to free: the history stays with the agent so the session can be revived."""

    @property
    def workspace(self) -> Path | None:
        """The sandbox workspace of a sandbox eval (`@define_eval(fixture=...)`), else None."""
        return current_workspace()

    def tool(
        self,
        name: str,
        input: Any = None,
        *,
        output: Any = None,
        status: Literal["success", "failed"] = "success",
        error: str | None = None,
        kind: Literal["tool", "shell", "skill"] = "tool",
        duration: float | None = None,
    ) -> None:
        """Report a tool (or shell command, or skill) call the agent made (`duration` in seconds, when known)."""
        self.log.emit(
            ActionCalledEvent(
                id=uuid.uuid4().hex[:12],
                name=name,
                kind=kind,
                input=input,
                output=output,
                status=status,
                error=error,
                duration=duration,
            )
        )

    @overload
    def call_tool(
        self, name: str, fn: Callable[..., Awaitable[T]], /, **input: Any
    ) -> Coroutine[Any, Any, T | str]: ...

    @overload
    def call_tool(self, name: str, fn: Callable[..., T], /, **input: Any) -> T | str: ...

    def call_tool(self, name: str, fn: Callable[..., Any], /, **input: Any) -> Any:
        """Run `fn(**input)` as tool `name` and report it; a raising tool is reported failed and its error
        returned as text, the way model APIs feed tool errors back to the model.

        With an async `fn`, await the call (`await session.call_tool(...)`): the tool is reported when it finishes.
        """
        started = time.perf_counter()
        if inspect.iscoroutinefunction(fn):  # called when awaited: an unawaited call leaves nothing to clean up
            return tracked(self._call_async_tool(name, input, lambda: fn(**input)), f"session.call_tool({name!r}, ...)")
        try:
            output = fn(**input)
        except Exception as exc:
            return self._tool_failed(name, input, exc, started)
        if inspect.isawaitable(output):
            return tracked(self._call_async_tool(name, input, lambda: output), f"session.call_tool({name!r}, ...)")
        self.tool(name, input, output=output, duration=time.perf_counter() - started)
        return output

    async def _call_async_tool(self, name: str, input: dict[str, Any], start: Callable[[], Awaitable[T]]) -> T | str:
        started = time.perf_counter()
        try:
            output = await start()
        except Exception as exc:
            return self._tool_failed(name, input, exc, started)
        self.tool(name, input, output=output, duration=time.perf_counter() - started)
        return output

    def _tool_failed(self, name: str, input: dict[str, Any], exc: Exception, started: float) -> str:
        message = f"{type(exc).__name__}: {exc}"
        self.tool(name, input, status="failed", error=message, duration=time.perf_counter() - started)
        return message

    def subagent(
        self,
        name: str,
        *,
        remote_url: str | None = None,
        input: Any = None,
        output: Any = None,
        status: Literal["success", "failed"] = "success",
    ) -> None:
        """Report a call to another agent."""
        self.log.emit(SubagentCalledEvent(name=name, remote_url=remote_url, input=input, output=output, status=status))

    def request_input(self, prompt: str, data: Any = None) -> None:
        """Ask a human for input: the turn ends `waiting` and the eval answers with `t.respond(...)`."""
        self.log.emit(InputRequestedEvent(prompt=prompt, data=data))

    def usage(
        self,
        model: str,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cost: float | None = None,
    ) -> None:
        """Report tokens spent by one model call (`model` as `provider/model`, for pricing)."""
        self.log.emit(
            UsageEvent(
                model=model,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cache_read_tokens=cache_read_tokens,
                cost=cost,
            )
        )


class FunctionAgent:
    """Adapts a function `message -> str | dict | BaseModel` (or `(message, session) -> ...`) to an agent.

    Conversation histories are kept per session id inside the agent, so `t.revive()` continues them; only the
    most recent `max_sessions` are kept, so a long suite's memory stays bounded.
    """

    def __init__(self, fn: AgentFunction, *, max_sessions: int = 1024) -> None:
        if not callable(fn):
            raise UsageError(f"a function agent needs a callable, got {type(fn).__name__}.")
        self.fn = fn
        self._histories: OrderedDict[str, list[MessageEvent]] = OrderedDict()
        self._max_sessions = max_sessions

    async def open(self, session_id: str, log: EventLog) -> FunctionSession:
        history = self._histories.pop(session_id, [])
        self._histories[session_id] = history
        while len(self._histories) > self._max_sessions:
            self._histories.popitem(last=False)
        return FunctionSession(self.fn, session_id, log, history)


def function_agent(fn: AgentFunction) -> FunctionAgent:
    """Decorate a function to use it as the agent under test: `@function_agent def my_agent(message, session)`."""
    return FunctionAgent(fn)
