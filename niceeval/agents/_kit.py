"""What the framework adapters share: optional imports, per-session histories, tool calls paired by id, usage.

Each adapter turns one framework's own hooks into niceeval events as they happen; this module holds the parts
that are the same whatever the framework, so the events mean the same thing across adapters.
"""

from __future__ import annotations

import importlib
import json
from collections import OrderedDict
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from niceeval._core.events import ActionCalledEvent, EventLog, MessageEvent, UsageEvent
from niceeval.agents._function import structure
from niceeval.agents._protocol import AgentReply

T = TypeVar("T")
KNOWN_PROVIDERS = ("openai", "anthropic")


def require(module: str, extra: str) -> ModuleType:
    """Import a framework module, or say which extra installs it.

    Raises:
        ImportError: The framework is not installed; the message names the `pip install` to run.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"niceeval's {extra} adapter needs {module.split('.')[0]!r}, which is not installed: "
            f"run pip install 'niceeval[{extra}]'"
        ) from exc


def priced_model(name: str, provider: str = "openai") -> str:
    """`provider/name`, the form the price table and `t.max_cost` read (a name that has a prefix keeps it)."""
    head = name.split("/", 1)[0] if "/" in name else ""
    if head in KNOWN_PROVIDERS:
        return name
    return f"{provider}/{name.split(':', 1)[-1] if name.startswith(provider + ':') else name}"


def usage_event(model: str, *, prompt_tokens: int, output_tokens: int, cached_tokens: int) -> UsageEvent:
    """A usage event from a prompt count that includes its cached part (as OpenAI reports it).

    The event counts cached tokens once, apart: `input_tokens` is the uncached part, `cache_read_tokens` the rest.
    """
    cached = max(0, min(cached_tokens, prompt_tokens))
    return UsageEvent(
        model=model, input_tokens=prompt_tokens - cached, output_tokens=output_tokens, cache_read_tokens=cached
    )


def parse_arguments(raw: object) -> Any:
    """Tool arguments as data: a JSON string is decoded, anything else is kept as it is."""
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            return raw
    return raw


def final_reply(log: EventLog, value: object, output: type[Any] | None) -> AgentReply:
    """The turn's reply from the framework's final output, checked against `output`, recorded as a message."""
    reply = structure(as_reply(value), output, log)
    log.emit(MessageEvent(role="assistant", text=reply.text, data=reply.data))
    return reply


def as_reply(value: object) -> AgentReply:
    """A framework's final output as a reply: text as is, models and data as JSON text with `data` kept."""
    if isinstance(value, AgentReply):
        return value
    if value is None:
        return AgentReply(text="")
    if isinstance(value, str):
        return AgentReply(text=value)
    if isinstance(value, BaseModel):
        return AgentReply(text=value.model_dump_json(), data=value)
    try:
        return AgentReply(text=json.dumps(value, default=str), data=value)
    except (TypeError, ValueError):
        return AgentReply(text=str(value), data=value)


@dataclass(slots=True)
class _Pending:
    name: str
    input: Any


class ToolCalls:
    """Tool calls in flight, paired by call id: one `action.called` event when each one ends."""

    def __init__(self, log: EventLog) -> None:
        self._log = log
        self._pending: dict[str, _Pending] = {}
        self._errors: dict[str, str] = {}

    def started(self, call_id: str, name: str, arguments: object) -> None:
        """A tool call began with these arguments (a JSON string or data)."""
        self._pending[call_id] = _Pending(name, parse_arguments(arguments))

    def failing(self, call_id: str, error: BaseException | str) -> None:
        """The call raised: when it ends, it is recorded as failed with this error."""
        self._errors[call_id] = error if isinstance(error, str) else f"{type(error).__name__}: {error}"

    def ended(self, call_id: str, output: object = None, *, name: str = "", arguments: object = None) -> None:
        """The call returned (or its error was turned into a result for the model): record it."""
        pending = self._pending.pop(call_id, None) or _Pending(name, parse_arguments(arguments))
        error = self._errors.pop(call_id, None)
        self._log.emit(
            ActionCalledEvent(
                id=call_id,
                name=pending.name or name,
                input=pending.input,
                status="failed" if error is not None else "success",
                output=_plain(output),
                error=error,
            )
        )

    def abandon(self, error: BaseException) -> None:
        """The run stopped with calls still in flight: each is recorded as failed with the run's error."""
        for call_id in list(self._pending):
            self.failing(call_id, error)
            self.ended(call_id)


def _plain(value: object) -> object:
    if value is None or isinstance(value, str | int | float | bool | list | dict):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return str(value)


class Histories(Generic[T]):
    """Conversations kept per session id (so `t.revive()` continues them), the most recent `limit` only."""

    def __init__(self, limit: int = 1024) -> None:
        self._items: OrderedDict[str, T] = OrderedDict()
        self._limit = limit

    def get(self, session_id: str) -> T | None:
        """The conversation of `session_id`, if one was kept."""
        return self._items.get(session_id)

    def put(self, session_id: str, history: T) -> None:
        """Keep `history` for `session_id` (the oldest sessions are dropped past the limit)."""
        self._items.pop(session_id, None)
        self._items[session_id] = history
        while len(self._items) > self._limit:
            self._items.popitem(last=False)
