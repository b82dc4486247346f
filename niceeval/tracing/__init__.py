"""OpenTelemetry for niceeval: an OTLP/HTTP receiver, the span model, and spans read as niceeval events.

An instrumented agent's spans (OpenTelemetry GenAI semantic conventions, OpenInference) become the same events
the adapters record, so `t.called_tool`, `t.max_tokens` and the rest work on any instrumented agent. Decoding
OTLP protobuf needs the `otel` extra: `pip install 'niceeval[otel]'`. `role(span)` says what a span is (a model
call, a tool run, an agent, a chain) by the same attributes. `Trace` is a finished trace as an online eval reads it
(`t.trace`): its spans, and the input and reply read from them.

The agent adapters trace a session through `niceeval.tracing._session` (`session_trace`, `traced_turn`,
`end_trace`), the package's one door for niceeval's own code: the suite-wide receiver and collector behind it are
wiring, not a user's API.

Design: docs/design/tracing.md
"""

from __future__ import annotations

from niceeval._core.spans import Span, SpanEvent, SpanKind, SpanStatus
from niceeval.tracing._mapping import Role, events_from_spans, role
from niceeval.tracing._trace import Trace

__all__ = ["Role", "Span", "SpanEvent", "SpanKind", "SpanStatus", "Trace", "events_from_spans", "role"]
