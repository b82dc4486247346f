"""What the run observed: its event stream (`t.events`, `t.tool_calls`, `t.usage`) and the assertions over it.

`Observations` is the part of the context behind `t.called_tool(...)`, `t.max_tokens(...)`, `t.file_changed(...)`
and the rest: each registers now and is scored after the eval returns, over the whole run's events (the workspace
assertions over its final diff). `EventAssertions` is the same set over a turn or a session.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

from niceeval._core.assertion import AssertionResult, Chainable, Matcher, grouped
from niceeval._core.errors import UsageError, caller_location
from niceeval._core.events import ActionCalledEvent, Event, EventLog, EventType
from niceeval._core.settings import Price
from niceeval._core.toolmatch import InputSpec
from niceeval._eval import efficiency, scoped, workspace
from niceeval._eval.efficiency import Usage, usage_of
from niceeval.expect import EventPattern, ToolPattern


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCall:
    """One tool (or shell command, or skill) call, typed for plain-Python assertions: `t.tool_calls[0].name`."""

    name: str
    input: Any = None
    output: Any = None
    status: str = "success"
    """`success` or `failed`."""
    duration: float | None = None
    """Seconds, when the adapter measured it."""
    error: str | None = None
    kind: str = "tool"
    """`tool`, `shell` or `skill`."""


def tool_calls_of(events: Sequence[Event]) -> list[ToolCall]:
    """The tool calls among `events`, in order."""
    return [
        ToolCall(
            name=e.name,
            input=e.input,
            output=e.output,
            status=e.status,
            duration=e.duration,
            error=e.error,
            kind=e.kind,
        )
        for e in events
        if isinstance(e, ActionCalledEvent)
    ]


EventSelector = Callable[[Sequence[Event]], Sequence[Event]]
"""Picks a scope's events out of the finished run's stream (a turn's, a session's)."""


class Scoped(Chainable):
    """A registered scoped assertion. Chain `.gate()`, `.at_least(x)`, `.label(text)`, `.optional()` on it.

    `scope` names where it looks ("turn 2", "session 2"; None for the whole run) and prefixes its name in reports;
    `select` picks that scope's events out of the run's stream.
    """

    __slots__ = ("matcher", "location", "scope", "select", "groups")

    def __init__(
        self, matcher: Matcher, location: str | None, *, scope: str | None = None, select: EventSelector | None = None
    ) -> None:
        self.matcher = matcher
        self.location = location
        self.scope = scope
        self.select = select
        self.groups = grouped("")
        """The `t.group(...)` blocks it was registered in, as the prefix of its name (`checkout › `)."""

    def _chained(self, **changes: Any) -> Self:
        self.matcher = self.matcher._chained(**changes)
        return self

    def _chain_name(self) -> str:
        return self.matcher.name

    def evaluate(self, subject: object) -> AssertionResult:
        """Score over the finished run's events (or, for workspace assertions, its diff)."""
        if self.select is not None:
            subject = list(self.select(subject))  # type: ignore[arg-type]
        try:
            raw = self.matcher.score_fn(subject)
            if hasattr(raw, "__await__"):
                raise UsageError(f"{self.matcher.name} at {self.location}: a scoped predicate must not be async.")
            result = self.matcher.result(raw, self.location)
        except UsageError:
            raise
        except Exception as exc:
            result = self.matcher.crashed(exc, self.location)
        if self.scope is None and not self.groups:
            return result
        scope = "" if self.scope is None else f"{self.scope}: "
        return result.model_copy(update={"name": f"{self.groups}{scope}{result.name}"})


class EventAssertions:
    """The assertions over an event stream, shared by the whole run (`Observations`, behind `t`), a `Turn` and a
    `Session`.

    Each registers now and is scored after the eval returns, over the events of its scope. A subclass says where
    (`_register`) and with which prices (`_prices`).
    """

    __slots__ = ()

    def _register(self, matcher: Matcher) -> Scoped:
        raise NotImplementedError

    def _prices(self) -> Mapping[str, Price]:
        raise NotImplementedError

    def succeeded(self) -> Scoped:
        """The run completed without error events or a pending input request."""
        return self._register(scoped.succeeded())

    def parked(self) -> Scoped:
        """The run ended cleanly waiting for human input."""
        return self._register(scoped.parked())

    def message_includes(self, needle: str | re.Pattern[str]) -> Scoped:
        """Some message's text includes `needle` (substring or compiled regex)."""
        return self._register(scoped.message_includes(needle))

    def called_tool(
        self,
        name: str,
        *,
        input: InputSpec | None = None,
        count: int | None = None,
        at_least: int | None = None,
        status: str | None = None,
    ) -> Scoped:
        """Tool `name` was called (with matching `input` and `status`): `count` times exactly, or `at_least`."""
        return self._register(scoped.called_tool(name, input=input, count=count, at_least=at_least, status=status))

    def not_called_tool(self, name: str, *, input: InputSpec | None = None) -> Scoped:
        """Tool `name` was never called (with matching `input`, when given)."""
        return self._register(scoped.not_called_tool(name, input=input))

    def tool_order(self, steps: Sequence[str | ToolPattern]) -> Scoped:
        """The tools were called in this relative order: names, or `tool(name, input=..., status=...)`."""
        return self._register(scoped.tool_order(steps))

    def used_no_tools(self) -> Scoped:
        """No tool was called."""
        return self._register(scoped.used_no_tools())

    def max_tool_calls(self, limit: int) -> Scoped:
        """At most `limit` tool calls."""
        return self._register(scoped.max_tool_calls(limit))

    def loaded_skill(self, skill: str) -> Scoped:
        """Skill `skill` was loaded."""
        return self._register(scoped.loaded_skill(skill))

    def called_subagent(self, name: str, *, remote_url: str | re.Pattern[str] | None = None) -> Scoped:
        """Subagent `name` was called (at a matching `remote_url`, when given)."""
        return self._register(scoped.called_subagent(name, remote_url=remote_url))

    def no_failed_actions(self) -> Scoped:
        """No tool, shell, skill or subagent call failed."""
        return self._register(scoped.no_failed_actions())

    def event(self, event_type: EventType, *, data: InputSpec | None = None, count: int | None = None) -> Scoped:
        """An event of this type appeared (matching `data`; exactly `count` times when given)."""
        return self._register(scoped.event(event_type, data=data, count=count))

    def not_event(self, event_type: EventType) -> Scoped:
        """No event of this type appeared."""
        return self._register(scoped.not_event(event_type))

    def event_order(self, steps: Sequence[EventType | EventPattern]) -> Scoped:
        """Events appeared in this relative order: types, or `event(type, data=...)`."""
        return self._register(scoped.event_order(steps))

    def events_satisfy(self, label: str, predicate: Callable[[list[Event]], bool]) -> Scoped:
        """`predicate(events)` holds over the whole stream."""
        return self._register(scoped.events_satisfy(label, predicate))

    def max_tokens(self, limit: int) -> Scoped:
        """Total tokens stay within `limit` (gate; score `limit / actual` beyond it)."""
        return self._register(efficiency.max_tokens(limit, self._prices()))

    def max_latency(self, seconds: float) -> Scoped:
        """Every turn in scope took at most `seconds` (gate; score `limit / slowest` beyond it)."""
        return self._register(efficiency.max_latency(seconds))

    def max_cost(self, usd: float) -> Scoped:
        """Estimated cost stays within `usd` (gate; inconclusive when a model has no price)."""
        return self._register(efficiency.max_cost(usd, self._prices()))


class Observations(EventAssertions):
    """The context's part for the whole run's event stream and the assertions over it (and over its workspace).

    Args:
        log: The run's event log.
        scoped: Where assertions over the events are registered.
        diff_scoped: Where assertions over the sandbox workspace's final diff are registered.
        pricing: The config's price overrides (usage, `max_cost`, `max_tokens`).
    """

    __slots__ = ("_log", "_scoped", "_diff_scoped", "_pricing")

    def __init__(
        self, *, log: EventLog, scoped: list[Scoped], diff_scoped: list[Scoped], pricing: Mapping[str, Price]
    ) -> None:
        self._log = log
        self._scoped = scoped
        self._diff_scoped = diff_scoped
        self._pricing = pricing

    @property
    def events(self) -> list[Event]:
        """The run's event stream so far."""
        return self._log.events

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The run's tool calls so far, in order, typed: name, input, output, status, duration."""
        return tool_calls_of(self._log.events)

    @property
    def usage(self) -> Usage:
        """Tokens and cost of the agent's model calls so far in this run."""
        return usage_of(self._log.events, self._pricing)

    def _prices(self) -> Mapping[str, Price]:
        return self._pricing

    def _register(self, matcher: Matcher) -> Scoped:
        handle = Scoped(matcher, caller_location(2))
        self._scoped.append(handle)
        return handle

    def _register_on_diff(self, matcher: Matcher) -> Scoped:
        handle = Scoped(matcher, caller_location(2))
        self._diff_scoped.append(handle)
        return handle

    def file_changed(
        self, path: str, *, before: workspace.ContentSpec | None = None, after: workspace.ContentSpec | None = None
    ) -> Scoped:
        """Sandbox evals: the fixture's file at `path` was modified; its text `before` and `after` the run match,
        when given (a string is the exact text, a compiled regex is searched, a matcher is applied)."""
        return self._register_on_diff(workspace.file_changed(path, before=before, after=after))

    def no_changes(self) -> Scoped:
        """Sandbox evals: nothing in the workspace changed."""
        return self._register_on_diff(workspace.no_changes())

    def changed_paths(self, paths: Sequence[str]) -> Scoped:
        """Sandbox evals: exactly these paths changed (added, modified or deleted), in any order."""
        return self._register_on_diff(workspace.changed_paths(paths))

    def file_added(self, path: str) -> Scoped:
        """Sandbox evals: a file was created at `path`."""
        return self._register_on_diff(workspace.file_added(path))

    def file_deleted(self, path: str) -> Scoped:
        """Sandbox evals: the fixture's file at `path` was deleted."""
        return self._register_on_diff(workspace.file_deleted(path))

    def not_in_diff(self, pattern: str | re.Pattern[str], *, side: workspace.DiffSide = "both") -> Scoped:
        """Sandbox evals: the workspace diff has no match of the regular expression `pattern` (e.g. no secrets).

        A string is a regular expression, as in `re.search`; pass `re.escape(text)` to search for text literally.
        `side="added"` searches only the lines the diff adds, `"removed"` only those it removes.
        """
        return self._register_on_diff(workspace.not_in_diff(pattern, side=side))

    def no_failed_shell_commands(self) -> Scoped:
        """No shell command exited non-zero."""
        return self._register(workspace.no_failed_shell_commands())
