"""The OTLP/HTTP receiver: real exporters in, spans routed to their eval run, bad input answered and counted."""

from __future__ import annotations

import gzip
from collections.abc import Iterator

import anyio
import httpx
import pytest

from niceeval.tracing._collector import TraceCollector, TraceLimits
from niceeval.tracing._receiver import TraceReceiver
from tests.tracing.trace_helpers import json_payload, json_span

WARNINGS: list[str] = []


@pytest.fixture
def receiver() -> Iterator[TraceReceiver]:
    WARNINGS.clear()
    server = TraceReceiver(TraceCollector(TraceLimits(max_spans=5), warn=WARNINGS.append)).start()
    try:
        yield server
    finally:
        anyio.run(server.close)


def post(receiver: TraceReceiver, body: bytes, content_type: str, **headers: str) -> httpx.Response:
    return httpx.post(receiver.endpoint, content=body, headers={"content-type": content_type, **headers}, timeout=10)


def test_sdk_exporter_spans_reach_their_run(receiver: TraceReceiver) -> None:
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags

    run = receiver.collector.open_run()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=receiver.endpoint, timeout=5)))
    tracer = provider.get_tracer("my.agent")
    parent = SpanContext(int(run.trace_id, 16), int(run.root_span_id, 16), is_remote=True, trace_flags=TraceFlags(1))
    context = trace.set_span_in_context(NonRecordingSpan(parent))
    with tracer.start_as_current_span("invoke_agent support", context=context, kind=trace.SpanKind.SERVER) as top:
        top.set_attribute("gen_ai.operation.name", "invoke_agent")
        with tracer.start_as_current_span("execute_tool lookup") as tool:
            tool.set_attributes({"gen_ai.tool.name": "lookup", "gen_ai.tool.call.arguments": '{"id": 7}'})
            tool.add_event("exception", {"exception.type": "KeyError", "exception.message": "7"})
            tool.set_status(Status(StatusCode.ERROR, "no order 7"))
    provider.shutdown()

    spans = receiver.collector.close_run(run)
    assert [s.name for s in spans] == ["invoke_agent support", "execute_tool lookup"]
    top_span, tool_span = spans
    assert top_span.parent_id == run.root_span_id and top_span.parent is None
    assert top_span.kind == "server" and top_span.service == "support-bot" and top_span.scope == "my.agent"
    assert tool_span.parent is top_span and top_span.children == [tool_span]
    assert tool_span.attributes == {"gen_ai.tool.name": "lookup", "gen_ai.tool.call.arguments": '{"id": 7}'}
    assert tool_span.status == "error" and tool_span.status_message == "no order 7"
    assert tool_span.events[0].attributes["exception.type"] == "KeyError"
    assert 0 < tool_span.duration < top_span.duration < 5


def test_json_payload_is_read_with_hex_ids(receiver: TraceReceiver) -> None:
    run = receiver.collector.open_run()
    body = json_payload(
        json_span(run.trace_id, "a" * 16, run.root_span_id, "chat", attributes={"gen_ai.usage.input_tokens": 12}),
        json_span(run.trace_id, "b" * 16, "a" * 16, "inner", kind=3, status={"code": 2, "message": "boom"}),
    )
    response = post(receiver, body, "application/json")
    assert response.status_code == 200 and response.json() == {}
    chat, inner = receiver.collector.close_run(run)
    assert chat.span_id == "a" * 16 and chat.attributes == {"gen_ai.usage.input_tokens": 12}
    assert inner.parent is chat and inner.kind == "client" and inner.status == "error"
    assert inner.status_message == "boom" and chat.start_ns == 1_000_000_000


def test_gzip_body_is_read(receiver: TraceReceiver) -> None:
    run = receiver.collector.open_run()
    body = gzip.compress(json_payload(json_span(run.trace_id, "c" * 16, run.root_span_id, "zipped")))
    assert post(receiver, body, "application/json", **{"content-encoding": "gzip"}).status_code == 200
    assert [s.name for s in receiver.collector.close_run(run)] == ["zipped"]


@pytest.mark.parametrize(
    ("body", "content_type", "reason"),
    [
        (b"\xff\xff\xff", "application/x-protobuf", "not an OTLP ExportTraceServiceRequest"),
        (b"{not json", "application/json", "the JSON body does not parse"),
        (b"[]", "application/json", "must be an object with resourceSpans"),
        (json_payload(json_span("zz" * 16, "a" * 16, None, "x")), "application/json", "traceId 'zzzz"),
        (json_payload(json_span("ab" * 4, "a" * 16, None, "x")), "application/json", "OTLP ids are 16 and 8 bytes"),
        (b"spans", "text/plain", "Content-Type 'text/plain' is not OTLP"),
    ],
)
def test_malformed_payload_gets_400_with_the_reason(
    receiver: TraceReceiver, body: bytes, content_type: str, reason: str
) -> None:
    response = post(receiver, body, content_type)
    assert response.status_code == 400
    assert reason in response.text
    assert receiver.refusals.count == 1 and reason in (receiver.refusal_summary() or "")
    run = receiver.collector.open_run()  # the receiver goes on
    assert post(receiver, json_payload(json_span(run.trace_id, "d" * 16, None, "ok")), "application/json").is_success


def test_wrong_path_names_the_endpoint(receiver: TraceReceiver) -> None:
    response = httpx.post(receiver.url + "/v1/metrics", content=b"", timeout=10)
    assert response.status_code == 404
    assert f"takes traces by POST at {receiver.url}/v1/traces" in response.text
    assert httpx.get(receiver.endpoint, timeout=10).status_code == 405


def test_spans_of_unknown_traces_are_kept_aside_and_counted(receiver: TraceReceiver) -> None:
    body = json_payload(json_span("1" * 32, "a" * 16, None, "stray"), json_span("1" * 32, "b" * 16, None, "two"))
    assert post(receiver, body, "application/json").status_code == 200
    collector = receiver.collector
    assert collector.unclaimed_count == 2 and [s.name for s in collector.unclaimed] == ["stray", "two"]
    assert collector.held == 0
    assert "2 span(s) belonged to no eval run" in (collector.summary() or "")


def test_late_span_after_its_run_closed_is_unclaimed(receiver: TraceReceiver) -> None:
    run = receiver.collector.open_run()
    receiver.collector.close_run(run)
    post(receiver, json_payload(json_span(run.trace_id, "a" * 16, run.root_span_id, "late")), "application/json")
    assert receiver.collector.unclaimed_count == 1


def test_flood_is_capped_with_one_warning_and_partial_success(receiver: TraceReceiver) -> None:
    run = receiver.collector.open_run()
    spans = [json_span(run.trace_id, f"{i:016x}", run.root_span_id, f"s{i}") for i in range(1, 8)]
    first = post(receiver, json_payload(*spans), "application/json")
    second = post(receiver, json_payload(*spans[:1]), "application/json")
    assert first.json()["partialSuccess"]["rejectedSpans"] == "2"
    assert second.json()["partialSuccess"]["rejectedSpans"] == "1"
    assert run.dropped == 3 and receiver.collector.held == 5
    assert len(WARNINGS) == 1 and "holds 5 spans, its limit" in WARNINGS[0]
    assert len(receiver.collector.close_run(run)) == 5
    assert receiver.collector.held == 0


def test_protobuf_partial_success_when_full(receiver: TraceReceiver) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    run = receiver.collector.open_run()
    spans = [json_span(run.trace_id, f"{i:016x}", run.root_span_id, f"s{i}") for i in range(1, 6)]
    post(receiver, json_payload(*spans), "application/json")
    request = ExportTraceServiceRequest()
    raw = request.resource_spans.add().scope_spans.add().spans.add()
    raw.trace_id, raw.span_id, raw.name = bytes.fromhex(run.trace_id), bytes.fromhex("f" * 16), "one too many"
    response = post(receiver, request.SerializeToString(), "application/x-protobuf")
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert response.status_code == 200 and answer.partial_success.rejected_spans == 1
