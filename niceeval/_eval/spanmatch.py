"""Span assertions: `t.span(...)`, `t.no_span(...)`, `t.no_error_spans()` over the run's trace, and `t.spans`.

A span is picked by what it is, in the same matching language as tool inputs: `name=` a string (equal), a
compiled regex (searched) or a predicate; `kind=` an OpenTelemetry span kind (`server`, `client`, `internal`, ...)
or what the span does by its semantic attributes (`model`, `tool`, `agent`, `chain`); `attributes=` a dict
matched partially (values literal, regex or predicate, nested dicts too). Like the other scoped assertions they
are registered now and scored over the whole trace after the eval returns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from niceeval._core.assertion import Matcher, ScoreLike, Verdict
from niceeval._core.errors import UsageError, caller_location
from niceeval._core.events import EventLog
from niceeval._core.spans import SPAN_KINDS, Span
from niceeval._core.toolmatch import check_spec, input_matches, render_spec
from niceeval._core.values import short
from niceeval._eval.observe import Scoped
from niceeval.tracing import role

NameSpec = str | re.Pattern[str] | Callable[[str], bool]
_ROLES = {"model": "model", "llm": "model", "tool": "tool", "agent": "agent", "chain": "chain"}
_MAX_LISTED = 20


@dataclass(frozen=True, kw_only=True, slots=True)
class SpanQuery:
    """Which spans an assertion looks at (every given part must match)."""

    name: NameSpec | None = None
    kind: str | None = None
    attributes: Mapping[str, Any] | None = None

    def check(self, where: str) -> None:
        """Reject what the language does not understand, where it was written."""
        if not (self.name is None or isinstance(self.name, str | re.Pattern) or callable(self.name)):
            raise UsageError(f"{where}: name= is a string, a compiled regex or a function; got {short(self.name)}.")
        if self.kind is not None and self.kind not in SPAN_KINDS and self.kind not in _ROLES:
            known = ", ".join([*SPAN_KINDS, *_ROLES])
            raise UsageError(f"{where}: unknown kind={self.kind!r}; known: {known}.")
        if self.attributes is not None and not isinstance(self.attributes, Mapping):
            raise UsageError(f"{where}: attributes= is a dict (matched partially); got {short(self.attributes)}.")
        check_spec(self.attributes, where)

    def matches(self, span: Span) -> bool:
        """Whether `span` is one of the spans asked for."""
        if self.kind is not None:
            if self.kind in _ROLES and role(span) != _ROLES[self.kind]:
                return False
            if self.kind not in _ROLES and span.kind != self.kind:
                return False
        return _name_matches(self.name, span.name) and input_matches(self.attributes, dict(span.attributes))

    def describe(self) -> str:
        """The query as a failure reason shows it."""
        parts = []
        if self.name is not None:
            parts.append(f"name {_render_name(self.name)}")
        if self.kind is not None:
            parts.append(f"kind {self.kind}")
        if self.attributes is not None:
            parts.append(render_spec(self.attributes).replace("input", "attributes"))
        return "a span with " + ", ".join(parts) if parts else "a span"


def _name_matches(spec: NameSpec | None, name: str) -> bool:
    if spec is None:
        return True
    if isinstance(spec, str):
        return spec == name
    if isinstance(spec, re.Pattern):
        return spec.search(name) is not None
    try:
        return bool(spec(name))
    except Exception:
        return False


def _render_name(spec: NameSpec) -> str:
    if isinstance(spec, str):
        return repr(spec)
    if isinstance(spec, re.Pattern):
        return f"/{spec.pattern}/"
    return f"satisfying {getattr(spec, '__name__', 'a predicate')}"


def describe_spans(spans: Sequence[Span]) -> str:
    """The spans seen, in start order: what every span assertion's miss lists."""
    if not spans:
        return "the run has no spans (is the agent traced? traced_agent(...) or an adapter's traces=True)"
    lines = [
        f"  {span.name} [{role(span) if role(span) != 'other' else span.kind}] {span.duration * 1000:.0f} ms"
        + (f" ERROR: {short(span.status_message)}" if span.failed else "")
        for span in spans[:_MAX_LISTED]
    ]
    if len(spans) > _MAX_LISTED:
        lines.append(f"  ... and {len(spans) - _MAX_LISTED} more")
    return "spans seen, in start order:\n" + "\n".join(lines)


def _count_rule(count: int | None, at_least: int | None, where: str) -> tuple[str, Callable[[int], bool]]:
    if count is not None and at_least is not None:
        raise UsageError(f"{where}: give count= (exact) or at_least=, not both.")
    for label, value in (("count", count), ("at_least", at_least)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise UsageError(f"{where}: {label}= must be a whole number >= 0, got {value!r}.")
    if count is not None:
        return f"exactly {count} time{'s' if count != 1 else ''}", lambda n: n == count
    low = 1 if at_least is None else at_least
    return f"at least {low} time{'s' if low != 1 else ''}", lambda n: n >= low


def span_seen(
    query: SpanQuery, *, count: int | None, at_least: int | None, max_duration: float | None, where: str
) -> Matcher:
    """Spans matching `query` appear the expected number of times, each within `max_duration` seconds."""
    query.check(where)
    if max_duration is not None and (isinstance(max_duration, bool) or not max_duration >= 0):
        raise UsageError(f"{where}: max_duration= is seconds, 0 or more; got {max_duration!r}.")
    rule_text, rule = _count_rule(count, at_least, where)
    expected = f"{query.describe()}, {rule_text}" + (
        f", each within {max_duration:g} s" if max_duration is not None else ""
    )

    def score(spans: Sequence[Span]) -> ScoreLike:
        matching = [span for span in spans if query.matches(span)]
        if not rule(len(matching)):
            return Verdict(False, describe_spans(spans), actual=f"{len(matching)} matching spans")
        slow = [s for s in matching if max_duration is not None and s.duration > max_duration]
        if slow:
            listed = ", ".join(f"{s.name} {s.duration:.3f} s" for s in slow[:_MAX_LISTED])
            return Verdict(False, f"over {max_duration:g} s: {listed}", actual=f"slowest {slow[0].duration:.3f} s")
        return True

    return Matcher(name=where, score_fn=score, expected=expected)


def no_span(query: SpanQuery, where: str) -> Matcher:
    """No span matches `query`."""
    query.check(where)

    def score(spans: Sequence[Span]) -> ScoreLike:
        matching = [span for span in spans if query.matches(span)]
        if not matching:
            return True
        return Verdict(False, describe_spans(matching), actual=f"{len(matching)} matching spans")

    return Matcher(name=where, score_fn=score, expected=f"no {query.describe().removeprefix('a ')}")


def no_error_spans() -> Matcher:
    """No span ended with status ERROR."""

    def score(spans: Sequence[Span]) -> ScoreLike:
        failed = [span for span in spans if span.failed]
        if not failed:
            return True
        listed = "; ".join(f"{s.name}: {s.status_message or 'ERROR'}" for s in failed[:_MAX_LISTED])
        return Verdict(False, f"error spans: {listed}", actual=f"{len(failed)} error spans")

    return Matcher(name="no_error_spans", score_fn=score, expected="no span with status ERROR")


class SpanAssertions:
    """The context's part for the run's trace (traced agents and `traces=True` adapters) and the assertions over it.

    Args:
        log: The run's event log, whose `spans` the traced agent fills.
        span_scoped: Where span assertions are registered (scored over the whole trace after the eval returns).
    """

    __slots__ = ("_log", "_span_scoped")

    def __init__(self, *, log: EventLog, span_scoped: list[Scoped]) -> None:
        self._log = log
        self._span_scoped = span_scoped

    @property
    def spans(self) -> list[Span]:
        """The run's spans so far, in start order, each with `parent` and `children`."""
        return self._log.spans

    def span(
        self,
        name: NameSpec | None = None,
        *,
        kind: str | None = None,
        attributes: Mapping[str, Any] | None = None,
        count: int | None = None,
        at_least: int | None = None,
        max_duration: float | None = None,
    ) -> Scoped:
        """A span matching `name`, `kind` and `attributes` appears (`count` times exactly, or `at_least`; each
        within `max_duration` seconds when given)."""
        query = SpanQuery(name=name, kind=kind, attributes=attributes)
        where = f"span({_render_name(name) if name is not None else kind or ''})"
        matcher = span_seen(query, count=count, at_least=at_least, max_duration=max_duration, where=where)
        return self._register_on_spans(matcher)

    def no_span(
        self, name: NameSpec | None = None, *, kind: str | None = None, attributes: Mapping[str, Any] | None = None
    ) -> Scoped:
        """No span matches `name`, `kind` and `attributes`."""
        where = f"no_span({_render_name(name) if name is not None else kind or ''})"
        return self._register_on_spans(no_span(SpanQuery(name=name, kind=kind, attributes=attributes), where))

    def no_error_spans(self) -> Scoped:
        """No span of the run's trace ended with status ERROR."""
        return self._register_on_spans(no_error_spans())

    def _register_on_spans(self, matcher: Matcher) -> Scoped:
        handle = Scoped(matcher, caller_location(2))
        self._span_scoped.append(handle)
        return handle
