"""The span model: what an instrumented agent reported, as niceeval reads it (typed, with parent and children).

Spans arrive from other processes (OTLP) or from this one (the SDK), so they are plain data here: ids as lowercase
hex, times as Unix nanoseconds on the clock of the process that made them, attributes as Python values.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SpanKind = Literal["unspecified", "internal", "server", "client", "producer", "consumer"]
SpanStatus = Literal["unset", "ok", "error"]
SPAN_KINDS: tuple[SpanKind, ...] = ("unspecified", "internal", "server", "client", "producer", "consumer")
"""In OTLP's order: a kind's number on the wire is its index here."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SpanEvent:
    """Something that happened during a span (`exception` events carry the error's type and message)."""

    name: str
    at_ns: int
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, slots=True, eq=False)
class Span:
    """One operation of a trace: a model call, a tool run, an agent invocation, ...

    `parent` and `children` link the spans of one eval run (see `link`); a span whose parent was not received
    has `parent` None, like a root.
    """

    trace_id: str
    """32 lowercase hex digits."""
    span_id: str
    """16 lowercase hex digits."""
    parent_id: str | None
    name: str
    kind: SpanKind = "internal"
    start_ns: int = 0
    end_ns: int = 0
    attributes: Mapping[str, Any] = field(default_factory=dict)
    status: SpanStatus = "unset"
    status_message: str = ""
    events: tuple[SpanEvent, ...] = ()
    service: str = ""
    """The `service.name` of the process that sent it."""
    scope: str = ""
    """The instrumentation scope (library) that made it, e.g. `pydantic-ai`, `openinference.instrumentation...`."""
    parent: Span | None = field(default=None, repr=False)
    children: list[Span] = field(default_factory=list, repr=False)

    @property
    def duration(self) -> float:
        """Seconds from start to end (0 for a span that ends before it starts: a clock that stepped back)."""
        return max(0, self.end_ns - self.start_ns) / 1e9

    @property
    def failed(self) -> bool:
        """The span's status is ERROR."""
        return self.status == "error"

    def descendants(self) -> Iterator[Span]:
        """Every span below this one, depth first in start order."""
        for child in self.children:
            yield child
            yield from child.descendants()

    def ancestors(self) -> Iterator[Span]:
        """The parent, its parent, ... up to the root."""
        span = self.parent
        while span is not None:
            yield span
            span = span.parent


def link(spans: Iterable[Span]) -> list[Span]:
    """Set `parent` and `children` among `spans` (children in start order); the spans, in start order.

    A span listed twice (an exporter that retried) is kept once. A cycle of parent ids (bad input) is cut where
    it closes, so walking up from any span ends.
    """
    unique: dict[str, Span] = {}
    for span in spans:
        unique.setdefault(span.span_id, span)
    ordered = sorted(unique.values(), key=lambda s: (s.start_ns, s.end_ns))
    for span in ordered:
        span.children = []
        span.parent = None
    for span in ordered:
        parent = unique.get(span.parent_id) if span.parent_id else None
        if parent is not None and parent is not span and not _is_below(parent, span):
            span.parent = parent
            parent.children.append(span)
    return ordered


def _is_below(candidate: Span, span: Span) -> bool:
    return any(ancestor is span for ancestor in candidate.ancestors())


class SpanRecord(BaseModel):
    """A span as stored and sent: the same fields, links as ids."""

    model_config = ConfigDict(extra="ignore")

    trace_id: str
    span_id: str
    parent_id: str | None = None
    name: str
    kind: SpanKind = "internal"
    start_ns: int = 0
    end_ns: int = 0
    attributes: dict[str, Any] = Field(default_factory=dict)
    status: SpanStatus = "unset"
    status_message: str = ""
    events: list[dict[str, Any]] = Field(default_factory=list)
    service: str = ""
    scope: str = ""

    @classmethod
    def of(cls, span: Span) -> SpanRecord:
        """The record of `span`."""
        return cls(
            trace_id=span.trace_id,
            span_id=span.span_id,
            parent_id=span.parent_id,
            name=span.name,
            kind=span.kind,
            start_ns=span.start_ns,
            end_ns=span.end_ns,
            attributes=dict(span.attributes),
            status=span.status,
            status_message=span.status_message,
            events=[{"name": e.name, "at_ns": e.at_ns, "attributes": dict(e.attributes)} for e in span.events],
            service=span.service,
            scope=span.scope,
        )

    def span(self) -> Span:
        """The span again (unlinked: `link` the spans of a run to get parents and children)."""
        return Span(
            trace_id=self.trace_id,
            span_id=self.span_id,
            parent_id=self.parent_id,
            name=self.name,
            kind=self.kind,
            start_ns=self.start_ns,
            end_ns=self.end_ns,
            attributes=self.attributes,
            status=self.status,
            status_message=self.status_message,
            events=tuple(
                SpanEvent(name=str(e.get("name", "")), at_ns=int(e.get("at_ns", 0)), attributes=e.get("attributes", {}))
                for e in self.events
            ),
            service=self.service,
            scope=self.scope,
        )
