"""The event stream: what an agent did during a run, as adapters report it and scoped assertions read it.

Events are stored with each run's result, so every assertion can be explained from the record.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from niceeval._core.spans import Span


def _now() -> datetime:
    return datetime.now(UTC)


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seq: int = 0
    """Position in the run's stream, assigned when the event is recorded."""
    at: datetime = Field(default_factory=_now)
    """When it happened (UTC)."""


class MessageEvent(_Event):
    """A message in the conversation (user or assistant)."""

    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system"]
    text: str
    data: Any = None
    """Structured payload of the message, when the agent returned one."""
    latency: float | None = None
    """An assistant reply to `t.send` / `t.respond`: seconds the agent's turn took, as niceeval measured it."""
    first_token: float | None = None
    """Seconds to the first streamed token, when the adapter streams and reports it."""


class ActionCalledEvent(_Event):
    """A tool, shell command or skill the agent called, with what went in and came out."""

    type: Literal["action.called"] = "action.called"
    id: str = ""
    name: str
    kind: Literal["tool", "shell", "skill"] = "tool"
    input: Any = None
    status: Literal["success", "failed"] = "success"
    output: Any = None
    error: str | None = None
    exit_code: int | None = None
    duration: float | None = None
    """Seconds the call took, when the agent reported it (traced tool spans do)."""


class SubagentCalledEvent(_Event):
    """A call to another agent (local or remote)."""

    type: Literal["subagent.called"] = "subagent.called"
    name: str
    remote_url: str | None = None
    status: Literal["success", "failed"] = "success"
    input: Any = None
    output: Any = None


class InputRequestedEvent(_Event):
    """The agent asked a human for input: the run parks until `t.respond(...)`."""

    type: Literal["input.requested"] = "input.requested"
    prompt: str = ""
    data: Any = None


class ErrorEvent(_Event):
    """Something went wrong inside the agent or its adapter."""

    type: Literal["error"] = "error"
    message: str
    error_type: str | None = None


class UsageEvent(_Event):
    """Tokens (and cost, when priced) spent by one model call."""

    type: Literal["usage"] = "usage"
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cost: float | None = None
    billed_to: Literal["agent", "judge"] = "agent"
    """`judge`: a call niceeval made for the eval (follow-up detection), counted as judge spend, never in
    `t.usage`, `turn.usage`, agent spend or `t.max_tokens` / `t.max_cost`."""


class ConnectionAttemptEvent(_Event):
    """An attempt from inside the sandbox to reach an address outside it (a TCP connect, a UDP datagram, a DNS
    query), seen and refused by the sandbox's network layer; `at` is when it was seen."""

    type: Literal["connection.attempt"] = "connection.attempt"
    protocol: Literal["tcp", "udp"]
    address: str
    port: int
    lookup: str | None = None
    """For a DNS query: the name it asked for."""


Event = Annotated[
    MessageEvent
    | ActionCalledEvent
    | SubagentCalledEvent
    | InputRequestedEvent
    | ErrorEvent
    | UsageEvent
    | ConnectionAttemptEvent,
    Field(discriminator="type"),
]
EventType = Literal[
    "message", "action.called", "subagent.called", "input.requested", "error", "usage", "connection.attempt"
]
if TYPE_CHECKING:
    EVENTS: TypeAdapter[list[Event]]


@functools.cache
def _events_adapter() -> TypeAdapter[list[Event]]:
    return TypeAdapter(list[Event])


def __getattr__(name: str) -> Any:
    # `EVENTS`, the validator of a stored list of events, is built when the store first reads one back: a run
    # never validates a list of events, and building it made this module's import slower.
    if name == "EVENTS":
        return _events_adapter()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def latencies(events: list[Event] | tuple[Event, ...]) -> list[float]:
    """The measured duration of each turn among `events` (seconds, from its reply's `latency`), in order."""
    return [e.latency for e in events if isinstance(e, MessageEvent) and e.latency is not None]


class EventLog:
    """The run's event stream: numbers each event as it is recorded. One per run; never shared."""

    __slots__ = ("events", "spans")

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.spans: list[Span] = []
        """The run's trace (traced agents add their spans here, linked), for the span assertions and the record."""

    def emit(self, event: Event) -> Event:
        """Record `event`, giving it the next sequence number."""
        event.seq = len(self.events)
        self.events.append(event)
        return event
