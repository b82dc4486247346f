"""OTLP trace payloads (protobuf and JSON) decoded into spans.

Protobuf goes through `opentelemetry-proto`'s own message. JSON (OTLP's JSON mapping of the same protobuf, with
trace and span ids in hex) is read straight from `json.loads`'s dicts into spans: `google.protobuf.json_format`
is pure Python and made JSON ingest ten times slower than protobuf. Anything the payload gets wrong is a
`BadPayload` whose message says what, for the 400 answer.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import zlib
from typing import Any

from niceeval._core.spans import SPAN_KINDS, Span, SpanEvent, SpanStatus
from niceeval._core.values import head

MAX_TEXT = 32_000
"""An attribute's text longer than this is kept cut, with a note saying how long it was."""
_STATUSES: tuple[SpanStatus, ...] = ("unset", "ok", "error")


class BadPayload(ValueError):
    """An OTLP request niceeval cannot read; the message says why (sent back with a 400)."""


def decompress(body: bytes, encoding: str, limit: int) -> bytes:
    """The body with its `Content-Encoding` (gzip, deflate or none) undone, at most `limit` bytes.

    Raises:
        BadPayload: An encoding niceeval does not read, a broken stream, or more than `limit` bytes.
    """
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "deflate"):
        raise BadPayload(f"Content-Encoding {encoding!r} is not supported: send gzip, deflate or none")
    inflater = zlib.decompressobj(wbits=31 if encoding == "gzip" else 15)
    try:
        out = inflater.decompress(body, limit + 1)
    except (zlib.error, gzip.BadGzipFile) as exc:
        raise BadPayload(f"the {encoding} body does not decompress: {exc}") from exc
    if len(out) > limit:
        raise BadPayload(f"the body decompresses to more than {limit:,} bytes")
    return out


def decode(body: bytes, content_type: str) -> list[Span]:
    """The spans of one OTLP `ExportTraceServiceRequest`, protobuf or JSON by `content_type`.

    Raises:
        BadPayload: The content type is neither, or the payload does not parse as a trace export.
    """
    media = content_type.split(";", 1)[0].strip().lower()
    if media == "application/json":
        return _json_spans(body)
    if media != "application/x-protobuf" and media != "application/protobuf":
        raise BadPayload(
            f"Content-Type {content_type or '(none)'!r} is not OTLP: send application/x-protobuf or application/json"
        )
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request: Any = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RuntimeWarning) as exc:
        raise BadPayload(f"the protobuf body is not an OTLP ExportTraceServiceRequest: {exc}") from exc
    return list(_spans(request))


def _json_spans(body: bytes) -> list[Span]:
    """OTLP/JSON read straight from the parsed dicts into spans (no protobuf message in between): the same
    spans protobuf's JSON mapping gives, field names in camelCase or snake_case, unknown fields ignored."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise BadPayload(f"the JSON body does not parse: {exc}") from exc
    if not isinstance(data, dict):
        raise BadPayload("the JSON body must be an object with resourceSpans")
    try:
        return [
            span
            for resource_spans in _list(data, "resourceSpans", "resource_spans")
            for span in _json_resource(resource_spans)
        ]
    except BadPayload:
        raise
    except (TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise BadPayload(f"the JSON body is not an OTLP trace export: {exc}") from exc


def _field(obj: dict[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def _list(obj: dict[str, Any], camel: str, snake: str) -> list[Any]:
    value = _field(obj, camel, snake)
    if value is None:
        return []
    if not isinstance(value, list):
        raise TypeError(f"{camel} must be a list, got {type(value).__name__}")
    return value


def _json_resource(resource_spans: dict[str, Any]) -> list[Span]:
    resource = json_attributes(_list(resource_spans.get("resource") or {}, "attributes", "attributes"))
    service = str(resource.get("service.name", ""))
    spans: list[Span] = []
    for scope_spans in _list(resource_spans, "scopeSpans", "scope_spans"):
        scope = str((scope_spans.get("scope") or {}).get("name") or "")
        spans.extend(_json_span(raw, service, scope) for raw in _list(scope_spans, "spans", "spans"))
    return spans


def _json_span(raw: dict[str, Any], service: str, scope: str) -> Span:
    name = str(raw.get("name") or "")
    trace_id, span_id = _hex_id(raw, "traceId", "trace_id"), _hex_id(raw, "spanId", "span_id")
    if len(trace_id) != 32 or len(span_id) != 16:
        raise BadPayload(
            f"span {name[:80]!r} has a trace id of {len(trace_id) // 2} bytes and a span id of "
            f"{len(span_id) // 2} bytes; OTLP ids are 16 and 8 bytes"
        )
    status = _field(raw, "status", "status") or {}
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=_hex_id(raw, "parentSpanId", "parent_span_id") or None,
        name=capped(name),
        kind=SPAN_KINDS[_enum(_field(raw, "kind", "kind"), _KIND_NAMES, len(SPAN_KINDS))],
        start_ns=int(_field(raw, "startTimeUnixNano", "start_time_unix_nano") or 0),
        end_ns=int(_field(raw, "endTimeUnixNano", "end_time_unix_nano") or 0),
        attributes=json_attributes(_list(raw, "attributes", "attributes")),
        status=_STATUSES[_enum(status.get("code"), _STATUS_NAMES, len(_STATUSES))],
        status_message=capped(str(status.get("message") or "")),
        events=tuple(
            SpanEvent(
                name=capped(str(event.get("name") or "")),
                at_ns=int(_field(event, "timeUnixNano", "time_unix_nano") or 0),
                attributes=json_attributes(_list(event, "attributes", "attributes")),
            )
            for event in _list(raw, "events", "events")
        ),
        service=service,
        scope=scope,
    )


_KIND_NAMES = {
    name: index
    for index, name in enumerate(
        ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"),
    )
}
_STATUS_NAMES = {"UNSET": 0, "OK": 1, "ERROR": 2}


def _enum(value: Any, names: dict[str, int], size: int) -> int:
    """An OTLP enum written as its number or its name (`SPAN_KIND_SERVER`, `STATUS_CODE_ERROR`); 0 when unknown."""
    if isinstance(value, str):
        return names.get(value.rsplit("_", 1)[-1], 0) if not value.isdigit() else _enum(int(value), names, size)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < size:
        return value
    return 0


def _hex_id(raw: dict[str, Any], camel: str, snake: str) -> str:
    value = _field(raw, camel, snake) or ""
    if not isinstance(value, str):
        raise BadPayload(f"{camel} {value!r:.40} is not hex (OTLP/JSON writes ids as hex)")
    try:
        return bytes.fromhex(value).hex()
    except ValueError as exc:
        raise BadPayload(f"{camel} {value[:40]!r} is not hex (OTLP/JSON writes ids as hex)") from exc


def json_attributes(pairs: list[Any]) -> dict[str, Any]:
    """OTLP/JSON `KeyValue`s as a dict of Python values (the last of a repeated key wins)."""
    return {str(pair.get("key") or ""): _json_value(pair.get("value") or {}) for pair in pairs}


def _json_value(value: dict[str, Any]) -> Any:
    for key, item in value.items():
        if key in ("stringValue", "string_value"):
            return capped(str(item))
        if key in ("intValue", "int_value"):
            return int(item)
        if key in ("boolValue", "bool_value"):
            return bool(item)
        if key in ("doubleValue", "double_value"):
            return float(item)
        if key in ("arrayValue", "array_value"):
            return [_json_value(entry or {}) for entry in _list(item or {}, "values", "values")]
        if key in ("kvlistValue", "kvlist_value"):
            return json_attributes(_list(item or {}, "values", "values"))
        if key in ("bytesValue", "bytes_value"):
            raw = base64.b64decode(str(item), validate=False)
            return binascii.hexlify(raw[: MAX_TEXT // 2]).decode("ascii")
    return None


def _spans(request: Any) -> Any:
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        service = str(resource.get("service.name", ""))
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name
            for raw in scope_spans.spans:
                yield _span(raw, service, scope)


def _span(raw: Any, service: str, scope: str) -> Span:
    if len(raw.trace_id) != 16 or len(raw.span_id) != 8:
        raise BadPayload(
            f"span {raw.name[:80]!r} has a trace id of {len(raw.trace_id)} bytes and a span id of "
            f"{len(raw.span_id)} bytes; OTLP ids are 16 and 8 bytes"
        )
    kind = raw.kind if 0 <= raw.kind < len(SPAN_KINDS) else 0
    code = raw.status.code if 0 <= raw.status.code < len(_STATUSES) else 0
    return Span(
        trace_id=raw.trace_id.hex(),
        span_id=raw.span_id.hex(),
        parent_id=raw.parent_span_id.hex() or None,
        name=capped(raw.name),
        kind=SPAN_KINDS[kind],
        start_ns=raw.start_time_unix_nano,
        end_ns=raw.end_time_unix_nano,
        attributes=attributes(raw.attributes),
        status=_STATUSES[code],
        status_message=capped(raw.status.message),
        events=tuple(
            SpanEvent(name=capped(e.name), at_ns=e.time_unix_nano, attributes=attributes(e.attributes))
            for e in raw.events
        ),
        service=service,
        scope=scope,
    )


def attributes(pairs: Any) -> dict[str, Any]:
    """OTLP `KeyValue`s as a dict of Python values (the last of a repeated key wins)."""
    return {pair.key: _value(pair.value) for pair in pairs}


def _value(value: Any) -> Any:
    which = value.WhichOneof("value")
    if which == "string_value":
        return capped(value.string_value)
    if which == "array_value":
        return [_value(item) for item in value.array_value.values]
    if which == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if which == "bytes_value":
        return binascii.hexlify(value.bytes_value[: MAX_TEXT // 2]).decode("ascii")
    if which is None:
        return None
    return getattr(value, which)


def capped(text: str) -> str:
    """`text`, cut at `MAX_TEXT` characters with a note saying how long it was."""
    if len(text) <= MAX_TEXT:
        return text
    return f"{head(text, MAX_TEXT)}\n[niceeval: truncated, kept {MAX_TEXT:,} of {len(text):,} characters]"
