"""Spans assembled into whole traces by trace id, with bounded memory.

Spans arrive from the receiver's thread in any order and in many requests. A trace is open from its first span;
it closes `grace` seconds after its root span (the one without a parent, exported when the request ended) arrives,
so the children a batch exporter sends late still join it, or `timeout` seconds after its first span when no root
ever comes (a lost root, a trace continued from an upstream caller): scored then with a note. Past the bounds
(open traces, spans held) a new trace is sampled away, counted, and its later spans with it; spans of a trace
already closed are counted as late and dropped (a recent-ids ring remembers which).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from niceeval._core.spans import Span
from niceeval.tracing import Trace


@dataclass(frozen=True, kw_only=True, slots=True)
class AssemblyLimits:
    """When traces close and how much the assembler holds.

    Args:
        grace: Seconds a trace stays open after its root span arrived (late children of a batch exporter).
        timeout: Seconds after its first span that a trace with no root is closed anyway (scored with a note).
        max_traces: Open traces held at once; a new trace past it is dropped and counted.
        max_spans: Spans held over every open trace; a span past it is dropped, and its trace with it.
    """

    grace: float = 2.0
    timeout: float = 300.0
    max_traces: int = 10_000
    max_spans: int = 500_000


@dataclass(slots=True)
class _Open:
    spans: list[Span]
    first_seen: float
    rooted: bool = False


@dataclass(slots=True)
class AssemblyCounts:
    """What the assembler has seen (for `/status`)."""

    spans: int = 0
    traces: int = 0
    closed: int = 0
    timed_out: int = 0
    dropped_traces: int = 0
    dropped_spans: int = 0
    late_spans: int = 0


class TraceAssembler:
    """Assembles spans into traces; thread-safe (`add` from the receiver's thread, `due` from the watcher's loop)."""

    def __init__(self, limits: AssemblyLimits | None = None, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits or AssemblyLimits()
        self.counts = AssemblyCounts()
        self._clock = clock
        self._lock = threading.Lock()
        self._open: OrderedDict[str, _Open] = OrderedDict()
        """Open traces, in the order their first span arrived (the timeout's order)."""
        self._closing: deque[tuple[float, str]] = deque()
        """(when to close, trace id) of traces whose root arrived, in that order (the grace is the same for all)."""
        self._held = 0
        self._gone: OrderedDict[str, None] = OrderedDict()
        """Trace ids recently closed or dropped: their later spans are late, not a new trace."""

    @property
    def open_traces(self) -> int:
        """Traces open now."""
        return len(self._open)

    @property
    def held_spans(self) -> int:
        """Spans held in open traces now."""
        return self._held

    def add(self, spans: Iterable[Span]) -> int:
        """Put `spans` in their traces; how many were refused (dropped: late, or past a bound)."""
        refused = 0
        now = self._clock()
        limits = self.limits
        with self._lock:
            for span in spans:
                self.counts.spans += 1
                trace = self._open.get(span.trace_id)
                if trace is None:
                    if span.trace_id in self._gone:
                        self.counts.late_spans += 1
                        refused += 1
                        continue
                    if len(self._open) >= limits.max_traces or self._held >= limits.max_spans:
                        self._forget(span.trace_id)
                        self.counts.dropped_traces += 1
                        self.counts.dropped_spans += 1
                        refused += 1
                        continue
                    trace = self._open[span.trace_id] = _Open(spans=[], first_seen=now)
                    self.counts.traces += 1
                elif self._held >= limits.max_spans:
                    self._drop(span.trace_id)
                    self.counts.dropped_spans += 1
                    refused += 1
                    continue
                trace.spans.append(span)
                self._held += 1
                if span.parent_id is None and not trace.rooted:
                    trace.rooted = True
                    self._closing.append((now + limits.grace, span.trace_id))
        return refused

    def due(self) -> list[Trace]:
        """The traces that closed by now (root plus grace, or the timeout), taken out of the assembler."""
        now = self._clock()
        found: list[tuple[list[Span], bool]] = []
        with self._lock:
            while self._closing and self._closing[0][0] <= now:
                _, trace_id = self._closing.popleft()
                trace = self._take(trace_id)
                if trace is not None:
                    found.append((trace.spans, False))
            while self._open:
                trace_id, trace = next(iter(self._open.items()))
                if trace.first_seen + self.limits.timeout > now:
                    break
                self._take(trace_id)
                self.counts.timed_out += 1
                found.append((trace.spans, True))
            self.counts.closed += len(found)
        return [Trace.of(spans, timed_out=timed_out) for spans, timed_out in found]

    def drain(self) -> list[Trace]:
        """Every open trace, closed now (the watcher is stopping); those without a root count as timed out."""
        with self._lock:
            taken = [(trace_id, self._take(trace_id)) for trace_id in list(self._open)]
            self._closing.clear()
        found = [(trace.spans, not trace.rooted) for _, trace in taken if trace is not None]
        self.counts.closed += len(found)
        self.counts.timed_out += sum(1 for _, timed_out in found if timed_out)
        return [Trace.of(spans, timed_out=timed_out) for spans, timed_out in found]

    def _take(self, trace_id: str) -> _Open | None:
        trace = self._open.pop(trace_id, None)
        if trace is not None:
            self._held -= len(trace.spans)
            self._forget(trace_id)
        return trace

    def _drop(self, trace_id: str) -> None:
        trace = self._take(trace_id)
        if trace is not None:
            self.counts.dropped_traces += 1
            self.counts.dropped_spans += len(trace.spans)

    def _forget(self, trace_id: str) -> None:
        self._gone[trace_id] = None
        if len(self._gone) > self.limits.max_traces:
            self._gone.popitem(last=False)
