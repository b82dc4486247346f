"""Building OTLP payloads and spans for the tracing tests."""

from __future__ import annotations

import json
from typing import Any

from niceeval.tracing import Span


def attr(key: str, value: Any) -> dict[str, Any]:
    """An OTLP/JSON KeyValue."""
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    if isinstance(value, list):
        return {"key": key, "value": {"arrayValue": {"values": [attr("", v)["value"] for v in value]}}}
    return {"key": key, "value": {"stringValue": str(value)}}


def json_span(trace_id: str, span_id: str, parent: str | None, name: str, **extra: Any) -> dict[str, Any]:
    """An OTLP/JSON span; `attributes=` a dict, `start=`/`end=` nanoseconds."""
    attributes = extra.pop("attributes", {})
    span = {
        "traceId": trace_id,
        "spanId": span_id,
        "parentSpanId": parent or "",
        "name": name,
        "kind": extra.pop("kind", 1),
        "startTimeUnixNano": str(extra.pop("start", 1_000_000_000)),
        "endTimeUnixNano": str(extra.pop("end", 2_000_000_000)),
        "attributes": [attr(k, v) for k, v in attributes.items()],
    }
    span.update(extra)
    return span


def json_payload(*spans: dict[str, Any], service: str = "agent", scope: str = "tests") -> bytes:
    """An OTLP/JSON ExportTraceServiceRequest carrying `spans`."""
    request = {
        "resourceSpans": [
            {
                "resource": {"attributes": [attr("service.name", service)]},
                "scopeSpans": [{"scope": {"name": scope}, "spans": list(spans)}],
            }
        ]
    }
    return json.dumps(request).encode()


def span(span_id: str, parent: str | None, name: str = "op", start: int = 0, end: int = 1, **attributes: Any) -> Span:
    """A span of trace `t1` (ids short, for readability)."""
    return Span(
        trace_id="t1",
        span_id=span_id,
        parent_id=parent,
        name=name,
        start_ns=start,
        end_ns=end,
        attributes=attributes,
    )
