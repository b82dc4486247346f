"""OTLP/JSON read straight into spans: the same spans as the protobuf encoding of the same request, and bad
payloads answered with what is wrong."""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from niceeval.tracing import Span
from niceeval.tracing._otlp import MAX_TEXT, BadPayload, decode

ID_KEYS = {"traceId", "spanId", "parentSpanId"}


def _compared(spans: list[Span]) -> list[tuple[Any, ...]]:
    """What a span holds (spans compare by identity: `eq=False`), without the links made later."""
    return [
        tuple(getattr(s, f.name) for f in dataclasses.fields(s) if f.name not in ("parent", "children")) for s in spans
    ]


def _request() -> Any:
    """A request using every kind of value, enum, nesting and an over-long text."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.add(key="service.name").value.string_value = "agent"
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name = "tests"
    for index, kind in enumerate((0, 1, 2, 3, 5)):
        raw = scope_spans.spans.add()
        raw.trace_id = bytes([index + 1]) * 16
        raw.span_id = bytes([index + 10]) * 8
        if index:
            raw.parent_span_id = bytes([10]) * 8
        raw.name = f"span {index}"
        raw.kind = kind  # type: ignore[assignment]
        raw.start_time_unix_nano = 1_700_000_000_000_000_000 + index
        raw.end_time_unix_nano = 1_700_000_000_500_000_000 + index
        raw.status.code = index % 3  # type: ignore[assignment]
        raw.status.message = "boom" if index % 3 == 2 else ""
        raw.attributes.add(key="text").value.string_value = "héllo"
        raw.attributes.add(key="count").value.int_value = 2**40 + index
        raw.attributes.add(key="ok").value.bool_value = index % 2 == 0
        raw.attributes.add(key="ratio").value.double_value = 0.25 * index
        raw.attributes.add(key="blob").value.bytes_value = b"\x00\xffab"
        raw.attributes.add(key="empty")
        array = raw.attributes.add(key="list").value.array_value
        array.values.add().string_value = "a"
        array.values.add().int_value = 7
        nested = raw.attributes.add(key="map").value.kvlist_value
        nested.values.add(key="inner").value.string_value = "x" * (MAX_TEXT + 5)
        event = raw.events.add()
        event.name = "exception"
        event.time_unix_nano = 1_700_000_000_100_000_000
        event.attributes.add(key="exception.message").value.string_value = "bad"
    return request


def _otlp_json(request: Any) -> dict[str, Any]:
    """OTLP's JSON mapping: protobuf's own, with ids in hex rather than base64."""

    def hex_ids(value: Any) -> Any:
        if isinstance(value, list):
            return [hex_ids(item) for item in value]
        if isinstance(value, dict):
            return {
                key: base64.b64decode(item).hex() if key in ID_KEYS else hex_ids(item) for key, item in value.items()
            }
        return value

    return hex_ids(json_format.MessageToDict(request))  # type: ignore[no-any-return]


def test_json_gives_the_same_spans_as_protobuf_for_the_same_request() -> None:
    request = _request()
    from_protobuf = decode(request.SerializeToString(), "application/x-protobuf")
    from_json = decode(json.dumps(_otlp_json(request)).encode(), "application/json; charset=utf-8")
    assert _compared(from_json) == _compared(from_protobuf)
    assert [s.kind for s in from_json] == ["unspecified", "internal", "server", "client", "consumer"]
    assert from_json[0].attributes["blob"] == "00ff6162" and from_json[0].attributes["empty"] is None
    assert from_json[2].status == "error" and from_json[2].status_message == "boom"


def test_json_reads_snake_case_names_and_enums_written_as_names() -> None:
    request = _request()
    snake = json_format.MessageToDict(request, preserving_proto_field_name=True)
    for raw in snake["resource_spans"][0]["scope_spans"][0]["spans"]:
        for key in ("trace_id", "span_id", "parent_span_id"):
            if key in raw:
                raw[key] = base64.b64decode(raw[key]).hex()
    assert isinstance(snake["resource_spans"][0]["scope_spans"][0]["spans"][2]["kind"], str)  # SPAN_KIND_SERVER
    spans = decode(json.dumps(snake).encode(), "application/json")
    assert _compared(spans) == _compared(decode(request.SerializeToString(), "application/x-protobuf"))


def test_json_ignores_unknown_fields_and_reads_an_empty_export() -> None:
    assert decode(b"{}", "application/json") == []
    body = {"resourceSpans": [{"schemaUrl": "x", "scopeSpans": [{"spans": [], "future": 1}]}], "extra": True}
    assert decode(json.dumps(body).encode(), "application/json") == []


def _span(**fields: Any) -> bytes:
    raw = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "s", **fields}
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [raw]}]}]}).encode()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (_span(startTimeUnixNano="soon"), "is not an OTLP trace export: invalid literal for int()"),
        (_span(attributes="none"), "is not an OTLP trace export: attributes must be a list, got str"),
        (_span(attributes=["x"]), "is not an OTLP trace export: 'str' object has no attribute 'get'"),
        (_span(spanId=12), "spanId 12 is not hex"),
        (_span(parentSpanId="xyz"), "parentSpanId 'xyz' is not hex"),
        (_span(traceId="ab" * 8), "a trace id of 8 bytes and a span id of 8 bytes"),
        (b'{"resourceSpans": {"a": 1}}', "resourceSpans must be a list, got dict"),
    ],
)
def test_a_json_payload_that_is_not_an_export_says_what_is_wrong(body: bytes, message: str) -> None:
    with pytest.raises(BadPayload) as caught:
        decode(body, "application/json")
    assert message in str(caught.value)
