"""Traces per eval run: the suite's receiver and collector, and one `SessionTrace` per agent session.

`Tracing` is one per suite (a shared resource of the suite's client scope, like the agents' bridge): the
collector, the OTLP receiver (started when an agent first needs its URL), the in-process span router. A session
opens a trace on it; each turn runs under that trace (in-process context, `traceparent` for HTTP, environment
for subprocesses), then waits for the turn's spans (a bounded flush window), and hands them to the run's log.

This module is the tracing package's one door for the agent adapters (`session_trace`, `traced_turn`,
`end_trace`, `SessionTrace`, `TraceOptions`, `DEFAULT_FLUSH_WINDOW`) and for `niceeval watch` (`watch_receiver`):
every adapter that traces a session goes through it, and no other private module of `niceeval.tracing` is imported
from outside the package. The suite's
tracing is a shared resource the adapters open and give back, not something a user builds, so it is not public.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from niceeval._core.errors import UsageError
from niceeval._core.events import EventLog
from niceeval._core.spans import Span, link
from niceeval._core.threads import load_off_loop
from niceeval.tracing._collector import RunTrace, TraceCollector
from niceeval.tracing._mapping import events_from_spans

if TYPE_CHECKING:
    from niceeval.tracing._receiver import SpanSink, TraceReceiver

DEFAULT_FLUSH_WINDOW = 2.0
"""Seconds a turn waits at most for its spans (a batch exporter's late ones); `flush_window=` changes it."""
_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


class Tracing:
    """The suite's tracing: one collector, one receiver (on first use), the in-process router."""

    def __init__(self) -> None:
        self.collector = TraceCollector()
        self._receiver: TraceReceiver | None = None
        self._in_process = False
        self.silent_sessions = 0
        """Traced sessions that ended without a single span (warned about at the end)."""

    @property
    def receiver(self) -> TraceReceiver:
        """The suite's OTLP receiver on 127.0.0.1, started on first use: on port `NICEEVAL_OTLP_PORT` when set
        (for a service started before the suite), else on a free port.

        Raises:
            UsageError: `NICEEVAL_OTLP_PORT` is not a port number.
        """
        if self._receiver is None:
            from niceeval.tracing._receiver import TraceReceiver  # uvicorn loads when an agent needs the URL

            self._receiver = TraceReceiver(self.collector, port=_receiver_port())
        return self._receiver.start()

    def capture_in_process(self) -> None:
        """Take this process's spans for the suite's runs (the SDK's global provider; once)."""
        if not self._in_process:
            from niceeval.tracing._sdk import capture

            capture(self.collector)
            self._in_process = True

    async def close(self) -> None:
        """Stop the receiver and the routing; print what went wrong with the suite's spans."""
        if self._in_process:
            from niceeval.tracing._sdk import release

            release(self.collector)
        if self._receiver is not None:
            await self._receiver.close()
        for problem in self.problems():
            print(f"niceeval: warning: {problem}", file=sys.stderr, flush=True)

    def problems(self) -> list[str]:
        """Warnings about the suite's traces: spans no run took, refused requests, sessions with no spans."""
        found = [self.collector.summary(), self._receiver.refusal_summary() if self._receiver else None]
        if self.silent_sessions:
            found.append(self._silence())
        return [problem for problem in found if problem]

    def _silence(self) -> str:
        where = f"niceeval listens for OTLP/HTTP traces at {self._receiver.endpoint}" if self._receiver else ""
        elsewhere = [f"{name}={os.environ[name]}" for name in _ENDPOINT_VARIABLES if os.environ.get(name)]
        return (
            f"{self.silent_sessions} traced agent session(s) sent no spans within the flush window. "
            "In process: is the agent instrumented (pydantic-ai `instrument=True`, an OpenInference instrumentor)? "
            + (f"Out of process: {where}; give the agent session.env (or point its exporter there)" if where else "")
            + (f"; this process has {', '.join(elsewhere)}" if elsewhere else "")
            + "."
        )


def _receiver_port() -> int:
    raw = os.environ.get("NICEEVAL_OTLP_PORT", "").strip()
    if not raw:
        return 0
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise UsageError(f"NICEEVAL_OTLP_PORT must be a port number (e.g. 4318), not {raw!r}")
    return int(raw)


@dataclass(frozen=True, kw_only=True, slots=True)
class TraceOptions:
    """How a traced session takes its spans.

    Args:
        flush_window: Seconds each turn waits at most for its spans to arrive whole.
        events: Map the spans to events (tool calls, usage, subagents, errors). Off for adapters that record
            events themselves: their spans are kept for the span assertions and the viewer only.
        listen: Start the OTLP receiver with the session.
    """

    flush_window: float = DEFAULT_FLUSH_WINDOW
    events: bool = True
    listen: bool = False
    """Start the OTLP receiver with the session (spans come from another process); it also starts when
    `NICEEVAL_OTLP_PORT` is set, or when `env` is first read."""


class SessionTrace:
    """One agent session's trace: each turn under it, its spans handed to the run's log as the turn ends."""

    def __init__(self, tracing: Tracing, log: EventLog, options: TraceOptions) -> None:
        self.tracing = tracing
        self.options = options
        self._log = log
        self.run: RunTrace = tracing.collector.open_run()
        self._closed = False
        if options.listen or os.environ.get("NICEEVAL_OTLP_PORT"):
            tracing.receiver  # noqa: B018 - started now, so a service exporting to it finds it

    @property
    def traceparent(self) -> str:
        """The W3C `traceparent` of the current turn: send it as a header, or give it to a subprocess."""
        return self.run.traceparent

    @property
    def env(self) -> dict[str, str]:
        """Environment for an agent run as a subprocess: where to export (OTLP/HTTP protobuf, short batch delay)
        and the current turn's `TRACEPARENT` to continue."""
        return {
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": self.tracing.receiver.endpoint,
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_BSP_SCHEDULE_DELAY": "50",
            "TRACEPARENT": self.traceparent,
        }

    @asynccontextmanager
    async def turn(self, *, in_process: bool = True) -> AsyncIterator[None]:
        """Run one turn under the trace; afterwards wait (bounded) for its spans and record them."""
        self.run.new_turn()
        since = len(self.run.spans)
        if in_process:
            self.tracing.capture_in_process()
            from niceeval.tracing._sdk import under

            with under(self.run):
                try:
                    yield
                finally:
                    await self._collect(since)
            return
        try:
            yield
        finally:
            await self._collect(since)

    async def _collect(self, since: int) -> None:
        await self.tracing.collector.settle(self.run, self.options.flush_window, since)
        spans = link(self.run.spans)
        fresh = {id(span) for span in self.run.spans[since:]}
        if self.options.events:
            for event in events_from_spans([span for span in spans if id(span) in fresh]):
                self._log.emit(event)
        _merge(self._log.spans, spans)

    def close(self) -> None:
        """Stop collecting (spans that come later are unclaimed); a session with no spans is counted."""
        if self._closed:
            return
        self._closed = True
        spans = self.tracing.collector.close_run(self.run)
        if not spans:
            self.tracing.silent_sessions += 1


def _merge(kept: list[Span], spans: list[Span]) -> None:
    """Put this session's spans into the run's, replacing its earlier ones (linked again with the new)."""
    ids = {id(span) for span in spans}
    kept[:] = [span for span in kept if id(span) not in ids] + spans
    kept.sort(key=lambda span: (span.start_ns, span.end_ns))


_SDK_MODULES = ("opentelemetry.trace", "opentelemetry.sdk.trace", "niceeval.tracing._sdk")
_RECEIVER_MODULES = (
    "niceeval.tracing._receiver",
    "opentelemetry.proto.collector.trace.v1.trace_service_pb2",
)


async def session_trace(log: EventLog, options: TraceOptions) -> SessionTrace:
    """A trace for one agent session on the suite's tracing (`end_trace` gives it back).

    The OpenTelemetry SDK (and, for a session that listens, the receiver's server and protobuf) load in a worker
    thread on first use, never on the event loop the other evals run on.
    """
    from niceeval.providers import shared_resource

    await load_off_loop(*_SDK_MODULES, *(_RECEIVER_MODULES if options.listen else ()))
    return SessionTrace(shared_resource("niceeval-tracing", Tracing), log, options)


@asynccontextmanager
async def traced_turn(trace: SessionTrace | None) -> AsyncIterator[None]:
    """`trace.turn()`, or nothing for an untraced session."""
    if trace is None:
        yield
        return
    async with trace.turn():
        yield


async def end_trace(trace: SessionTrace | None) -> None:
    """Close the session's trace and give the suite's tracing back (nothing for an untraced session)."""
    if trace is None:
        return
    from niceeval.providers import release

    trace.close()
    await release(trace.tracing)


def watch_receiver(
    sink: SpanSink, *, host: str, port: int, token: str | None, status: Callable[[], dict[str, Any]]
) -> TraceReceiver:
    """`niceeval watch`'s OTLP/HTTP receiver (not started): spans to `sink`, `GET /status` answered by `status`,
    every request checked for `token` when one is given (required beyond loopback).

    Raises:
        UsageError: `host` is not loopback and there is no token.
    """
    from niceeval.tracing._receiver import TraceReceiver

    return TraceReceiver(sink, host=host, port=port, token=token, status=status)
