"""The simplest agent: a plain Python function (sync or async) from a message to a reply."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from pydantic import BaseModel

from niceeval._core.errors import UsageError
from niceeval._core.events import EventLog, MessageEvent
from niceeval.agents._protocol import Reply

AgentFunction = Callable[..., Any]


def _as_reply(value: object) -> Reply:
    if isinstance(value, Reply):
        return value
    if isinstance(value, str):
        return Reply(text=value)
    if isinstance(value, BaseModel):
        return Reply(text=value.model_dump_json(), data=value)
    if isinstance(value, dict | list):
        return Reply(text=json.dumps(value, default=str), data=value)
    if value is None:
        return Reply(text="")
    return Reply(text=str(value), data=value)


class FunctionSession:
    """A conversation with a function agent; the function may take it as a second argument."""

    def __init__(self, fn: AgentFunction, session_id: str, log: EventLog) -> None:
        self.id = session_id
        self.log = log
        self.history: list[MessageEvent] = []
        self._fn = fn
        self._takes_session = len(inspect.signature(fn).parameters) >= 2

    async def send(self, message: str, *, output: type[Any] | None = None) -> Reply:
        user = MessageEvent(role="user", text=message)
        self.log.emit(user)
        self.history.append(user)
        args: tuple[Any, ...] = (message, self) if self._takes_session else (message,)
        if inspect.iscoroutinefunction(self._fn):
            raw = await self._fn(*args)
        else:
            raw = await anyio.to_thread.run_sync(lambda: self._fn(*args))
        if inspect.isawaitable(raw):
            raw = await raw
        reply = _as_reply(raw)
        answer = MessageEvent(role="assistant", text=reply.text, data=reply.data)
        self.log.emit(answer)
        self.history.append(answer)
        return reply

    async def close(self) -> None:
        self.history.clear()


class FunctionAgent:
    """Adapts a function `message -> str | dict | BaseModel` (or `(message, session) -> ...`) to an agent."""

    def __init__(self, fn: AgentFunction) -> None:
        if not callable(fn):
            raise UsageError(f"a function agent needs a callable, got {type(fn).__name__}.")
        self.fn = fn

    async def open(self, session_id: str, log: EventLog) -> FunctionSession:
        return FunctionSession(self.fn, session_id, log)
