"""OTLP trace payloads (protobuf and JSON) decoded into spans.

Both encodings go through `opentelemetry-proto`'s own message: JSON is OTLP's JSON mapping of the same protobuf,
except that trace and span ids are hex (not protobuf's base64), so they are turned to base64 first and
`google.protobuf.json_format` does the rest. Anything the payload gets wrong is a `BadPayload` whose message says
what, for the 400 answer.
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
_ID_KEYS = {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}
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
    from google.protobuf import json_format
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    media = content_type.split(";", 1)[0].strip().lower()
    request: Any = ExportTraceServiceRequest()
    if media == "application/x-protobuf" or media == "application/protobuf":
        try:
            request.ParseFromString(body)
        except (DecodeError, RuntimeWarning) as exc:
            raise BadPayload(f"the protobuf body is not an OTLP ExportTraceServiceRequest: {exc}") from exc
    elif media == "application/json":
        try:
            data = json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise BadPayload(f"the JSON body does not parse: {exc}") from exc
        if not isinstance(data, dict):
            raise BadPayload("the JSON body must be an object with resourceSpans")
        try:
            json_format.ParseDict(_ids_as_base64(data), request, ignore_unknown_fields=True)
        except json_format.ParseError as exc:
            raise BadPayload(f"the JSON body is not an OTLP trace export: {exc}") from exc
    else:
        raise BadPayload(
            f"Content-Type {content_type or '(none)'!r} is not OTLP: send application/x-protobuf or application/json"
        )
    return list(_spans(request))


def _ids_as_base64(value: Any) -> Any:
    if isinstance(value, list):
        return [_ids_as_base64(item) for item in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in _ID_KEYS and isinstance(item, str):
            try:
                out[key] = base64.b64encode(bytes.fromhex(item)).decode("ascii")
            except ValueError as exc:
                raise BadPayload(f"{key} {item[:40]!r} is not hex (OTLP/JSON writes ids as hex)") from exc
        else:
            out[key] = _ids_as_base64(item)
    return out


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
