"""Spans routed to the eval run whose trace they belong to, with bounded memory.

Every eval run that collects traces gets its own trace id (and a root span id that its agent's spans hang
under). Spans come in from the receiver's thread (OTLP) or from the agent's own threads (the SDK), are sorted by
trace id, and wait in the run's `RunTrace` until the run takes them. Spans of traces no run opened (an agent
that did not propagate the context, a span that came after its run ended) are kept aside, a few, and counted.
"""

from __future__ import annotations

import secrets
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import anyio

from niceeval._core.spans import Span, link


@dataclass(frozen=True, kw_only=True, slots=True)
class TraceLimits:
    """How much the collector holds.

    Args:
        max_spans: Spans held at once over all runs; past it new spans are dropped (counted, warned once).
        max_unclaimed: Spans of unknown traces kept aside for a look (the rest are only counted).
        poll: Seconds between checks while a run waits for its late spans.
    """

    max_spans: int = 200_000
    max_unclaimed: int = 1_000
    poll: float = 0.005


class RunTrace:
    """The spans of one eval run's trace, as they arrive."""

    def __init__(self, trace_id: str, root_span_id: str) -> None:
        self.trace_id = trace_id
        """32 hex digits: the W3C trace id the run's agent works under."""
        self.root_span_id = root_span_id
        """16 hex digits: the parent that the agent's top spans name now (niceeval's span for the current turn)."""
        self.turn_ids: list[str] = [root_span_id]
        """The parent span id of each turn so far (`new_turn`), so each span can be put in its turn."""
        self.spans: list[Span] = []
        self.dropped = 0
        """Spans of this run dropped because the collector was full."""
        self.closed = False

    @property
    def traceparent(self) -> str:
        """The W3C `traceparent` header value that puts an agent's spans in this run (sampled)."""
        return f"00-{self.trace_id}-{self.root_span_id}-01"

    def new_turn(self) -> str:
        """A new parent span id for the next turn (the first turn uses the one the run started with)."""
        if len(self.spans) or len(self.turn_ids) > 1:
            self.root_span_id = secrets.token_hex(8)
            self.turn_ids.append(self.root_span_id)
        return self.root_span_id

    def complete(self, since: int = 0) -> bool:
        """Whether the spans from `since` on look whole: one hangs under the current turn's parent, and every
        one's parent is here (or is a turn's)."""
        fresh = self.spans[since:]
        if not fresh:
            return False
        known = {span.span_id for span in self.spans} | set(self.turn_ids)
        if any(span.parent_id is not None and span.parent_id not in known for span in fresh):
            return False
        return any(span.parent_id == self.root_span_id for span in fresh)

    def linked(self) -> list[Span]:
        """The spans with parent and children set, in start order."""
        return link(self.spans)


class TraceCollector:
    """Routes spans to open runs by trace id. Thread-safe: spans arrive from any thread."""

    def __init__(self, limits: TraceLimits | None = None, warn: Callable[[str], None] | None = None) -> None:
        self.limits = limits or TraceLimits()
        self._warn = warn or _stderr
        self._lock = threading.Lock()
        self._runs: dict[str, RunTrace] = {}
        self._held = 0
        self.unclaimed: deque[Span] = deque(maxlen=self.limits.max_unclaimed)
        """The latest spans of traces no open run owns (at most `max_unclaimed`)."""
        self.unclaimed_count = 0
        self.dropped_count = 0
        self.received = 0
        self._warned_full = False

    def open_run(self) -> RunTrace:
        """A new trace for one eval run: spans naming its trace id go to it until `close_run`."""
        run = RunTrace(secrets.token_hex(16), secrets.token_hex(8))
        with self._lock:
            self._runs[run.trace_id] = run
        return run

    def close_run(self, run: RunTrace) -> list[Span]:
        """Stop routing to `run` and free what it held; its spans, linked (later ones count as unclaimed)."""
        with self._lock:
            self._runs.pop(run.trace_id, None)
            run.closed = True
            self._held -= len(run.spans)
        return run.linked()

    def add(self, spans: Iterable[Span], *, known_only: bool = False) -> int:
        """Route `spans` to their runs; how many were refused because the collector is full.

        With `known_only` (spans of this process's own SDK), spans of other traces are none of niceeval's
        business and are passed over; otherwise they are kept aside as unclaimed.
        """
        refused = 0
        full_now = False
        with self._lock:
            for span in spans:
                run = self._runs.get(span.trace_id)
                if run is None and known_only:
                    continue
                self.received += 1
                if run is None:
                    self.unclaimed_count += 1
                    self.unclaimed.append(span)
                elif self._held >= self.limits.max_spans:
                    refused += 1
                    run.dropped += 1
                    self.dropped_count += 1
                    full_now = full_now or not self._warned_full
                else:
                    self._held += 1
                    run.spans.append(span)
            self._warned_full = self._warned_full or full_now
        if full_now:
            self._warn(
                f"the trace collector holds {self.limits.max_spans:,} spans, its limit: further spans are dropped "
                "(counted on each run); an agent may be flooding spans, or raise the limit (TraceLimits.max_spans)"
            )
        return refused

    @property
    def held(self) -> int:
        """Spans held for open runs."""
        return self._held

    def knows(self, trace_id: str) -> bool:
        """Whether a run is open on `trace_id` (read without the lock: a dict lookup)."""
        return trace_id in self._runs

    async def settle(self, run: RunTrace, window: float, since: int = 0) -> bool:
        """Wait up to `window` seconds for `run`'s spans from `since` on to look whole (late batch exports).

        Returns whether they did; a turn that never does (no spans at all, a parent never sent) costs the window.
        """
        deadline = time.monotonic() + window
        while not run.complete(since):
            if time.monotonic() >= deadline:
                return False
            await anyio.sleep(self.limits.poll)
        return True

    def summary(self) -> str | None:
        """The suite-end warning about spans no run took, or None."""
        if not self.unclaimed_count:
            return None
        return (
            f"{self.unclaimed_count:,} span(s) belonged to no eval run (their trace was not started by niceeval, or "
            "they arrived after their run ended): does the agent propagate the traceparent niceeval sends, and "
            "does its exporter flush before the turn returns?"
        )


def _stderr(message: str) -> None:
    print(f"niceeval: warning: {message}", file=sys.stderr, flush=True)
