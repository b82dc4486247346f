"""Scoped assertions: registered anywhere in an eval, evaluated over the whole event stream after it returns.

Each builder returns a `Matcher` whose score function takes the run's event list, so scoped assertions share
the severity, threshold and reporting machinery of value matchers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from niceeval._core.assertion import Matcher, ScoreLike, Verdict
from niceeval._core.errors import UsageError
from niceeval._core.events import (
    ActionCalledEvent,
    Event,
    EventType,
    InputRequestedEvent,
    MessageEvent,
    SubagentCalledEvent,
)
from niceeval._core.toolmatch import InputSpec, check_spec, input_matches, render_spec, serialise
from niceeval._core.values import short
from niceeval._core.wording import plural
from niceeval.expect import EventPattern, ToolPattern
from niceeval.expect._runtime import as_pattern

_EVENT_TYPES = {
    "message", "action.called", "subagent.called", "input.requested", "error", "usage", "connection.attempt"
}  # fmt: skip
_MAX_LISTED = 20


def _actions(events: Sequence[Event]) -> list[ActionCalledEvent]:
    return [e for e in events if isinstance(e, ActionCalledEvent)]


def describe_calls(events: Sequence[Event]) -> str:
    """The calls seen, in order, with inputs: what every tool assertion's miss lists."""
    calls = _actions(events)
    if not calls:
        return "no tool calls were made"
    lines = [
        f"  {i}. {c.name}({short(serialise(c.input))}) -> {c.status}"
        for i, c in enumerate(calls[:_MAX_LISTED], start=1)
    ]
    if len(calls) > _MAX_LISTED:
        lines.append(f"  ... and {len(calls) - _MAX_LISTED} more")
    return "calls seen, in order:\n" + "\n".join(lines)


def _count_rule(count: int | None, at_least: int | None, where: str) -> tuple[str, Callable[[int], bool]]:
    if count is not None and at_least is not None:
        raise UsageError(f"{where}: give count= (exact) or at_least=, not both.")
    for name, value in (("count", count), ("at_least", at_least)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise UsageError(f"{where}: {name}= must be a whole number >= 0, got {value!r}.")
    if count is not None:
        return f"exactly {count} time{'s' if count != 1 else ''}", lambda n: n == count
    low = 1 if at_least is None else at_least
    return f"at least {low} time{'s' if low != 1 else ''}", lambda n: n >= low


def called_tool(
    name: str,
    *,
    input: InputSpec | None = None,
    count: int | None = None,
    at_least: int | None = None,
    status: str | None = None,
) -> Matcher:
    """The agent called tool `name` (with matching input and status) the expected number of times."""
    where = f"called_tool({name!r})"
    check_spec(input, where)
    _check_status(status, where)
    rule_text, rule = _count_rule(count, at_least, where)
    expected = f"{name} called {rule_text} with {render_spec(input)}" + (f", status {status}" if status else "")

    def score(events: Sequence[Event]) -> ScoreLike:
        matching = [
            c
            for c in _actions(events)
            if c.name == name and (status is None or c.status == status) and input_matches(input, c.input)
        ]
        if rule(len(matching)):
            return True
        return Verdict(False, describe_calls(events), actual=f"{len(matching)} matching calls")

    return Matcher(name=where, score_fn=score, expected=expected)


def not_called_tool(name: str, *, input: InputSpec | None = None) -> Matcher:
    """The agent never called tool `name` (with matching input, when `input` is given)."""
    where = f"not_called_tool({name!r})"
    check_spec(input, where)

    def score(events: Sequence[Event]) -> ScoreLike:
        matching = [c for c in _actions(events) if c.name == name and input_matches(input, c.input)]
        if not matching:
            return True
        return Verdict(False, describe_calls(events), actual=f"{len(matching)} matching calls")

    return Matcher(name=where, score_fn=score, expected=f"{name} never called with {render_spec(input)}")


def _check_status(status: str | None, where: str) -> None:
    if status not in (None, "success", "failed"):
        raise UsageError(f"{where}: status= is 'success' or 'failed', got {status!r}.")


def _in_order(steps: Sequence[ToolPattern | EventPattern], events: Sequence[Event]) -> bool:
    position = iter(events)
    return all(any(step.matches(e) for e in position) for step in steps)


def tool_order(steps: Sequence[str | ToolPattern]) -> Matcher:
    """The tools were called in this relative order (other calls may come between); a step is a tool name or
    `tool(name, input=..., status=...)`."""
    if isinstance(steps, str) or not steps:
        raise UsageError("tool_order() takes a list of tool names, e.g. tool_order(['read_file', 'write_file']).")
    patterns = [as_pattern(step, "tool_order()", kind="tool") for step in steps]
    shown = [str(p) for p in patterns]

    def score(events: Sequence[Event]) -> ScoreLike:
        if _in_order(patterns, _actions(events)):
            return True
        return Verdict(False, describe_calls(events))

    return Matcher(name=f"tool_order({' -> '.join(shown)})", score_fn=score, expected=" then ".join(shown))


def used_no_tools() -> Matcher:
    """The agent called no tool at all."""

    def score(events: Sequence[Event]) -> ScoreLike:
        return True if not _actions(events) else Verdict(False, describe_calls(events))

    return Matcher(name="used_no_tools", score_fn=score, expected="no tool calls")


def max_tool_calls(limit: int) -> Matcher:
    """The agent made at most `limit` tool calls."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise UsageError(f"max_tool_calls() takes a whole number >= 0, got {limit!r}.")

    def score(events: Sequence[Event]) -> ScoreLike:
        calls = len(_actions(events))
        return True if calls <= limit else Verdict(False, describe_calls(events), actual=plural(calls, "call"))

    return Matcher(name=f"max_tool_calls({limit})", score_fn=score, expected=f"at most {limit} tool calls")


def loaded_skill(skill: str) -> Matcher:
    """The agent loaded skill `skill`: a `skill` action of that name, or `load_skill` with `{"skill": ...}`."""

    def score(events: Sequence[Event]) -> ScoreLike:
        for c in _actions(events):
            if (c.kind == "skill" and c.name == skill) or (
                c.name == "load_skill" and input_matches({"skill": skill}, c.input)
            ):
                return True
        return Verdict(False, describe_calls(events))

    return Matcher(name=f"loaded_skill({skill!r})", score_fn=score, expected=f"skill {skill} loaded")


def called_subagent(name: str, *, remote_url: str | re.Pattern[str] | None = None) -> Matcher:
    """The agent called subagent `name` (at a URL matching `remote_url`, when given)."""

    def url_ok(url: str | None) -> bool:
        if remote_url is None:
            return True
        if isinstance(remote_url, re.Pattern):
            return url is not None and remote_url.search(url) is not None
        return url == remote_url

    def score(events: Sequence[Event]) -> ScoreLike:
        calls = [e for e in events if isinstance(e, SubagentCalledEvent)]
        if any(c.name == name and url_ok(c.remote_url) for c in calls):
            return True
        seen = ", ".join(f"{c.name} ({c.remote_url or 'local'})" for c in calls) or "none"
        return Verdict(False, f"subagent calls seen: {seen}")

    return Matcher(name=f"called_subagent({name!r})", score_fn=score, expected=f"subagent {name} called")


def no_failed_actions() -> Matcher:
    """No tool, shell, skill or subagent call failed."""

    def score(events: Sequence[Event]) -> ScoreLike:
        failed = [e for e in events if isinstance(e, ActionCalledEvent | SubagentCalledEvent) and e.status == "failed"]
        if not failed:
            return True
        listed = "; ".join(f"{e.name}: {getattr(e, 'error', None) or 'failed'}" for e in failed[:_MAX_LISTED])
        return Verdict(False, f"failed calls: {listed}", actual=f"{len(failed)} failed")

    return Matcher(name="no_failed_actions", score_fn=score, expected="no failed calls")


def _check_type(event_type: str, where: str) -> None:
    if event_type not in _EVENT_TYPES:
        raise UsageError(f"{where}: unknown event type {event_type!r}; known: {', '.join(sorted(_EVENT_TYPES))}.")


def _types_seen(events: Sequence[Event]) -> str:
    return "event types seen, in order: " + (", ".join(e.type for e in events[:50]) or "none")


def event(event_type: EventType, *, data: InputSpec | None = None, count: int | None = None) -> Matcher:
    """An event of `event_type` appeared (with fields matching `data`; exactly `count` times when given)."""
    where = f"event({event_type!r})"
    _check_type(event_type, where)
    check_spec(data, where)
    rule_text, rule = _count_rule(count, None, where)

    def score(events: Sequence[Event]) -> ScoreLike:
        found = [e for e in events if e.type == event_type and input_matches(data, e.model_dump(mode="json"))]
        return True if rule(len(found)) else Verdict(False, _types_seen(events), actual=f"{len(found)} matching")

    return Matcher(name=where, score_fn=score, expected=f"{event_type} {rule_text} with {render_spec(data)}")


def not_event(event_type: EventType) -> Matcher:
    """No event of `event_type` appeared."""
    where = f"not_event({event_type!r})"
    _check_type(event_type, where)

    def score(events: Sequence[Event]) -> ScoreLike:
        found = [e for e in events if e.type == event_type]
        if not found:
            return True
        return Verdict(
            False,
            f"first one: {short(found[0].model_dump(mode='json', exclude={'at'}))}",
            actual=f"{len(found)} {event_type} events",
        )

    return Matcher(name=where, score_fn=score, expected=f"no {event_type} events")


def event_order(steps: Sequence[EventType | EventPattern]) -> Matcher:
    """Events of these types appeared in this relative order; a step is a type or `event(type, data=...)`."""
    if isinstance(steps, str) or not steps:
        raise UsageError("event_order() takes a list of event types, e.g. event_order(['action.called', 'message']).")
    patterns = [as_pattern(step, "event_order()", kind="event") for step in steps]
    shown = [str(p) for p in patterns]

    def score(events: Sequence[Event]) -> ScoreLike:
        return True if _in_order(patterns, events) else Verdict(False, _types_seen(events))

    return Matcher(name=f"event_order({' -> '.join(shown)})", score_fn=score, expected=" then ".join(shown))


def events_satisfy(label: str, predicate: Callable[[list[Event]], bool]) -> Matcher:
    """`predicate(events)` is true; `label` names it in reports."""
    if not isinstance(label, str) or not label.strip() or not callable(predicate):
        raise UsageError('events_satisfy() takes a label and a function: events_satisfy("read before write", fn).')
    return Matcher(name=label, score_fn=predicate, expected=label)


def message_includes(needle: str | re.Pattern[str]) -> Matcher:
    """Some message's text includes `needle` (a substring or a compiled regex)."""
    if not isinstance(needle, str | re.Pattern):
        raise UsageError(f"message_includes() takes a string or a compiled regex, got {short(needle)}.")

    def found_in(text: str) -> bool:
        return needle.search(text) is not None if isinstance(needle, re.Pattern) else needle in text

    def score(events: Sequence[Event]) -> ScoreLike:
        messages = [e for e in events if isinstance(e, MessageEvent)]
        if any(found_in(m.text) for m in messages):
            return True
        return Verdict(False, f"searched {len(messages)} messages", actual=short([m.text for m in messages][-3:]))

    shown = f"/{needle.pattern}/" if isinstance(needle, re.Pattern) else repr(needle)
    return Matcher(name=f"message_includes({shown})", score_fn=score, expected=f"a message including {shown}")


def waiting_for_input(events: Sequence[Event]) -> InputRequestedEvent | None:
    """The input request the run is parked on: one that no later user message answered."""
    pending: InputRequestedEvent | None = None
    for e in events:
        if isinstance(e, InputRequestedEvent):
            pending = e
        elif isinstance(e, MessageEvent) and e.role == "user":
            pending = None
    return pending


def succeeded() -> Matcher:
    """The run completed: no error events and no unanswered input request."""

    def score(events: Sequence[Event]) -> ScoreLike:
        errors = [e for e in events if e.type == "error"]
        if errors:
            return Verdict(False, f"{len(errors)} error events; first: {short(errors[0].model_dump(exclude={'at'}))}")
        if waiting_for_input(events) is not None:
            return Verdict(False, "the run ended parked, waiting for human input")
        return True

    return Matcher(name="succeeded", score_fn=score, expected="completed without errors or pending input")


def parked() -> Matcher:
    """The run ended cleanly, waiting for human input (an unanswered `input.requested`)."""

    def score(events: Sequence[Event]) -> ScoreLike:
        if waiting_for_input(events) is not None:
            return True
        return Verdict(False, "no unanswered input request at the end of the run", actual=_types_seen(events))

    return Matcher(name="parked", score_fn=score, expected="waiting for human input")
