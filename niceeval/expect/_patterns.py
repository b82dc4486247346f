"""`tool(...)` and `event(...)`: one step of `t.tool_order([...])` / `t.event_order([...])`, more precise than a name.

`t.tool_order([tool("read_file", input={"path": "a.txt"}), "write_file"])`: the read of a.txt, then any write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, get_args

from niceeval._core.errors import UsageError
from niceeval._core.events import ActionCalledEvent, Event, EventType
from niceeval._core.toolmatch import InputSpec, check_spec, input_matches, render_spec

EVENT_TYPES: frozenset[str] = frozenset(get_args(EventType))


@dataclass(frozen=True, slots=True)
class ToolPattern:
    """A tool call to look for: its name, and optionally its input (the tool-input language) and status."""

    name: str
    input: InputSpec | None = None
    status: str | None = None

    def matches(self, event: Event) -> bool:
        """Whether `event` is a call of this tool with a matching input and status."""
        return (
            isinstance(event, ActionCalledEvent)
            and event.name == self.name
            and (self.status is None or event.status == self.status)
            and input_matches(self.input, event.input)
        )

    def __str__(self) -> str:
        parts = [] if self.input is None else [render_spec(self.input)]
        parts += [] if self.status is None else [f"status {self.status}"]
        return self.name + (f" ({', '.join(parts)})" if parts else "")


@dataclass(frozen=True, slots=True)
class EventPattern:
    """An event to look for: its type, and optionally its fields (the tool-input language over the event)."""

    type: str
    data: InputSpec | None = None

    def matches(self, event: Event) -> bool:
        """Whether `event` has this type and matching fields."""
        return event.type == self.type and (
            self.data is None or input_matches(self.data, event.model_dump(mode="json"))
        )

    def __str__(self) -> str:
        return self.type if self.data is None else f"{self.type} ({render_spec(self.data)})"


def tool(name: str, *, input: InputSpec | None = None, status: str | None = None) -> ToolPattern:
    """A step of `tool_order`: a call of tool `name` (with matching `input` and `status`, when given)."""
    if not isinstance(name, str) or not name:
        raise UsageError(f"tool() takes the tool's name as a string, got {name!r}.")
    check_spec(input, f"tool({name!r})")
    if status not in (None, "success", "failed"):
        raise UsageError(f"tool({name!r}): status= is 'success' or 'failed', got {status!r}.")
    return ToolPattern(name, input, status)


def event(type: str, *, data: InputSpec | None = None) -> EventPattern:
    """A step of `event_order`: an event of `type` (with fields matching `data`, when given)."""
    if type not in EVENT_TYPES:
        raise UsageError(f"event({type!r}): unknown event type; known: {', '.join(sorted(EVENT_TYPES))}.")
    check_spec(data, f"event({type!r})")
    return EventPattern(type, data)


def as_pattern(step: Any, where: str, *, kind: str) -> ToolPattern | EventPattern:
    """A step of an order given as a name (or type) or as a pattern; anything else is a usage error."""
    if kind == "tool":
        if isinstance(step, ToolPattern):
            return step
        if isinstance(step, str) and step:
            return ToolPattern(step)
        raise UsageError(f"{where}: each step is a tool name or tool(name, input=...), got {step!r}.")
    if isinstance(step, EventPattern):
        return step
    if isinstance(step, str):
        return event(step)
    raise UsageError(f"{where}: each step is an event type or event(type, data=...), got {step!r}.")
