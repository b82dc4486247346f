"""Adapters with `traces=True`: their spans are kept for the span assertions, their events are not counted twice;
`http_agent` sends each request its turn's `traceparent`, and a service that exports under it lands in the run."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from niceeval._core.events import ActionCalledEvent, UsageEvent
from niceeval.agents import http_agent, pydantic_ai_agent
from niceeval.testing import LLMServer, Reply, TokenUsage, ToolCall
from tests.agents.agent_helpers import opened

pytestmark = pytest.mark.anyio


def lookup(order_id: str) -> str:
    """Look up an order."""
    return f"order {order_id}: shipped"


async def test_pydantic_ai_traces_keep_spans_and_count_events_once(llm_server: LLMServer) -> None:
    from pydantic_ai import Agent

    llm_server.push(
        ToolCall(name="lookup", arguments={"order_id": "42"}),
        Reply(text="It shipped.", usage=TokenUsage(input_tokens=50, output_tokens=5)),
    )
    agent = Agent("openai:gpt-5-mini", tools=[lookup], defer_model_check=True)
    async with opened(pydantic_ai_agent(agent, base_url=llm_server.base_url, traces=True)) as (session, log):
        await session.send("Where is 42?")
    assert len([e for e in log.events if isinstance(e, ActionCalledEvent)]) == 1
    usages = [e for e in log.events if isinstance(e, UsageEvent)]
    assert len(usages) == 2  # one per model call: the hooks', none from the spans
    operations = [span.attributes.get("gen_ai.operation.name") for span in log.spans]
    assert operations.count("execute_tool") == 1 and operations.count("invoke_agent") == 1
    assert operations.count("chat") == 2


SERVICE = textwrap.dedent(
    """
    import json, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    provider = TracerProvider(resource=Resource.create({"service.name": "support-service"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=sys.argv[2])))
    tracer = provider.get_tracer("support.service")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            traceparent = self.headers.get("traceparent")
            if traceparent:
                context = TraceContextTextMapPropagator().extract({"traceparent": traceparent})
                with tracer.start_as_current_span("handle message", context=context) as span:
                    span.set_attribute("app.message", body["message"])
            answer = json.dumps({"reply": "ok " + body["message"], "data": {"traceparent": traceparent}}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
    """
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    otlp_port, service_port = free_port(), free_port()
    monkeypatch.setenv("NICEEVAL_OTLP_PORT", str(otlp_port))
    script = tmp_path / "service.py"
    script.write_text(SERVICE)
    endpoint = f"http://127.0.0.1:{otlp_port}/v1/traces"
    process = subprocess.Popen([sys.executable, str(script), str(service_port), endpoint])
    url = f"http://127.0.0.1:{service_port}/chat"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


async def test_http_agent_sends_traceparent_and_the_services_spans_land_in_the_run(service: str) -> None:
    async with opened(http_agent(service, traces=True)) as (session, log):
        first = await session.send("first")
        assert (await session.send("second")).text == "ok second"
    assert first.text == "ok first" and first.data["traceparent"].startswith(f"00-{log.spans[0].trace_id}-")
    assert [span.attributes["app.message"] for span in log.spans] == ["first", "second"]
    assert {span.service for span in log.spans} == {"support-service"}
    assert len({span.trace_id for span in log.spans}) == 1
    assert log.spans[0].parent_id != log.spans[1].parent_id  # one parent per turn
    assert [e.type for e in log.events] == ["message", "message", "message", "message"]


async def test_http_agent_without_traces_sends_no_traceparent(service: str) -> None:
    async with opened(http_agent(service)) as (session, log):
        reply = await session.send("plain")
    assert reply.data == {"traceparent": None} and log.spans == []
