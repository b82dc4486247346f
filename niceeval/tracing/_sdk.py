"""Spans of agents running in niceeval's own process: taken from the OpenTelemetry SDK as each one ends.

One span processor per process (`SpanRouter`) sits on the global tracer provider: the application's own SDK
provider when it set one (its exporters keep working), else an SDK provider niceeval sets. It hands the spans of
traces an eval run opened to that run's collector, as they end (no batching, no export), and ignores the rest.
Eval runs put their agent under the run's trace by attaching a context whose current span is the run's (remote)
parent: everything the agent starts in it, in tasks and threads that copy the context, joins the trace.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from niceeval._core.spans import Span, SpanEvent, SpanKind, SpanStatus
from niceeval.tracing._otlp import capped

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

    from niceeval.tracing._collector import RunTrace, TraceCollector

_KINDS: dict[str, SpanKind] = {
    "INTERNAL": "internal",
    "SERVER": "server",
    "CLIENT": "client",
    "PRODUCER": "producer",
    "CONSUMER": "consumer",
}
_STATUSES: dict[str, SpanStatus] = {"UNSET": "unset", "OK": "ok", "ERROR": "error"}
_lock = threading.Lock()
_router: Any = None
_provider_ids: set[int] = set()


class NoSdkProvider(RuntimeError):
    """The global tracer provider is not the OpenTelemetry SDK's, so niceeval cannot see in-process spans."""


def capture(collector: TraceCollector) -> None:
    """Route this process's spans of `collector`'s runs to it (installing the router once per provider).

    Raises:
        ImportError: opentelemetry-sdk is not installed (`pip install 'niceeval[otel]'`).
        NoSdkProvider: The application set a tracer provider that is not the SDK's.
    """
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    with _lock:
        router = _get_router()
        router.collectors.add(collector)
        provider = trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):
            if type(provider).__name__ not in ("ProxyTracerProvider", "NoOpTracerProvider"):
                raise NoSdkProvider(
                    f"the global tracer provider is a {type(provider).__name__}, not the OpenTelemetry SDK's "
                    "TracerProvider, so niceeval cannot add its span processor: use opentelemetry-sdk's provider"
                )
            provider = TracerProvider()
            trace.set_tracer_provider(provider)
            provider = trace.get_tracer_provider()
            if not isinstance(provider, TracerProvider):  # another thread won the race with a foreign provider
                raise NoSdkProvider(f"the global tracer provider became a {type(provider).__name__}")
        if id(provider) not in _provider_ids:
            _provider_ids.add(id(provider))
            provider.add_span_processor(router)


def release(collector: TraceCollector) -> None:
    """Stop routing to `collector` (the router stays on the provider, idle)."""
    with _lock:
        if _router is not None:
            _router.collectors.discard(collector)


def _get_router() -> Any:
    global _router
    if _router is None:
        from opentelemetry.sdk.trace import SpanProcessor

        class SpanRouter(SpanProcessor):
            """Hands each ended span of an eval run's trace to the collector that opened the run."""

            def __init__(self) -> None:
                self.collectors: set[TraceCollector] = set()

            def on_end(self, span: ReadableSpan) -> None:
                context = span.context
                if context is None:
                    return
                trace_id = f"{context.trace_id:032x}"
                for collector in list(self.collectors):
                    if collector.knows(trace_id):
                        collector.add([from_sdk(span)], known_only=True)
                        return

        _router = SpanRouter()
    return _router


@contextlib.contextmanager
def under(run: RunTrace) -> Iterator[None]:
    """Make the run's current turn the parent of every span started inside (this task and what copies it)."""
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    parent = SpanContext(
        trace_id=int(run.trace_id, 16), span_id=int(run.root_span_id, 16), is_remote=True, trace_flags=TraceFlags(1)
    )
    token = otel_context.attach(trace.set_span_in_context(NonRecordingSpan(parent)))
    try:
        yield
    finally:
        otel_context.detach(token)


def from_sdk(span: ReadableSpan) -> Span:
    """niceeval's span for an SDK span."""
    context = span.context
    assert context is not None  # checked by the caller
    resource = span.resource.attributes if span.resource is not None else {}
    scope = span.instrumentation_scope
    return Span(
        trace_id=f"{context.trace_id:032x}",
        span_id=f"{context.span_id:016x}",
        parent_id=f"{span.parent.span_id:016x}" if span.parent is not None else None,
        name=capped(span.name),
        kind=_KINDS.get(span.kind.name, "internal"),
        start_ns=span.start_time or 0,
        end_ns=span.end_time or 0,
        attributes=_plain(span.attributes),
        status=_STATUSES.get(span.status.status_code.name, "unset"),
        status_message=capped(span.status.description or ""),
        events=tuple(
            SpanEvent(name=capped(e.name), at_ns=e.timestamp, attributes=_plain(e.attributes)) for e in span.events
        ),
        service=str(resource.get("service.name", "")),
        scope=scope.name if scope is not None else "",
    )


def _plain(attributes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in (attributes or {}).items():
        if isinstance(value, str):
            out[key] = capped(value)
        elif isinstance(value, tuple | list):
            out[key] = [capped(v) if isinstance(v, str) else v for v in value]
        else:
            out[key] = value
    return out
