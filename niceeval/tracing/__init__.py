"""OpenTelemetry for niceeval: an OTLP/HTTP receiver, the span model, and spans read as niceeval events.

An instrumented agent's spans (OpenTelemetry GenAI semantic conventions, OpenInference) become the same events
the adapters record, so `t.called_tool`, `t.max_tokens` and the rest work on any instrumented agent. Decoding
OTLP protobuf needs the `otel` extra: `pip install 'niceeval[otel]'`.

Design: docs/design/tracing.md
"""

from __future__ import annotations

from niceeval._core.spans import Span, SpanEvent, SpanKind, SpanStatus
from niceeval.tracing._mapping import events_from_spans

__all__ = ["Span", "SpanEvent", "SpanKind", "SpanStatus", "events_from_spans"]
