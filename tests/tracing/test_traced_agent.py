"""traced_agent: an agent's own OpenTelemetry spans become the run's events and spans, in process and out."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from opentelemetry import trace

from niceeval._core.errors import UsageError
from niceeval._core.events import ActionCalledEvent, MessageEvent, UsageEvent
from niceeval.agents import TracedSession, traced_agent
from niceeval.providers import shared_clients
from tests.agents.agent_helpers import of_type, opened

pytestmark = pytest.mark.anyio
tracer = trace.get_tracer("tests.my_agent")


def instrumented_turn(message: str) -> str:
    """A hand-instrumented agent: one agent span, a model call and a tool call under it."""
    with tracer.start_as_current_span("agent run", attributes={"gen_ai.operation.name": "invoke_agent"}):
        with tracer.start_as_current_span("llm") as chat:
            chat.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-5-mini",
                    "gen_ai.usage.input_tokens": 30,
                    "gen_ai.usage.output_tokens": 4,
                }
            )
        with tracer.start_as_current_span("tool") as tool:
            tool.set_attributes(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "lookup_order",
                    "gen_ai.tool.call.arguments": f'{{"order_id": "{message}"}}',
                    "gen_ai.tool.call.result": "shipped",
                }
            )
    return f"{message} shipped"


async def test_in_process_spans_become_the_turns_events_before_the_reply() -> None:
    agent = traced_agent(lambda message: instrumented_turn(message))  # a sync agent: runs in a thread
    async with opened(agent) as (session, log):
        reply = await session.send("A-7")
    assert reply.text == "A-7 shipped"
    assert [e.type for e in log.events] == ["message", "usage", "action.called", "message"]
    usage, call = log.events[1], log.events[2]
    assert isinstance(usage, UsageEvent) and (usage.model, usage.input_tokens, usage.output_tokens) == (
        "openai/gpt-5-mini",
        30,
        4,
    )
    assert isinstance(call, ActionCalledEvent)
    assert (call.name, call.input, call.output) == ("lookup_order", {"order_id": "A-7"}, "shipped")
    assert call.duration is not None and call.duration >= 0
    (top,) = [span for span in log.spans if span.parent is None]
    assert top.name == "agent run" and [c.name for c in top.children] == ["llm", "tool"]
    assert len(log.spans) == 3 and {s.trace_id for s in log.spans} == {top.trace_id}


async def test_each_turn_records_only_its_own_spans() -> None:
    @traced_agent
    async def agent(message: str) -> str:
        return instrumented_turn(message)

    async with opened(agent) as (session, log):
        await session.send("A-1")
        await session.send("A-2")
    calls = of_type(log, "action.called")
    assert [c.input for c in calls] == [{"order_id": "A-1"}, {"order_id": "A-2"}]  # type: ignore[attr-defined]
    tops = [span for span in log.spans if span.parent is None]
    assert len(tops) == 2 and tops[0].parent_id != tops[1].parent_id  # one parent per turn
    assert len(log.spans) == 6


async def test_spans_outside_any_eval_run_are_left_alone() -> None:
    with tracer.start_as_current_span("unrelated"):
        pass

    async with opened(traced_agent(instrumented_turn)) as (session, log):
        with tracer.start_as_current_span("also unrelated", context=trace.set_span_in_context(trace.INVALID_SPAN)):
            pass
        await session.send("A-3")
        assert isinstance(session, TracedSession)
        assert session.trace.tracing.collector.unclaimed_count == 0
    assert "unrelated" not in {span.name for span in log.spans}


EXPORTER_SCRIPT = textwrap.dedent(
    """
    import os, sys
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    provider = TracerProvider(resource=Resource.create({"service.name": "subprocess-agent"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # endpoint from the environment
    tracer = provider.get_tracer("my.subprocess")
    parent = TraceContextTextMapPropagator().extract({"traceparent": os.environ["TRACEPARENT"]})
    with tracer.start_as_current_span("invoke_agent", context=parent) as agent:
        agent.set_attribute("gen_ai.operation.name", "invoke_agent")
        with tracer.start_as_current_span("execute_tool lookup") as tool:
            tool.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                                 "gen_ai.tool.call.arguments": '{"q": "%s"}' % sys.argv[1]})
        with tracer.start_as_current_span("chat") as chat:
            chat.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-5-mini",
                                 "gen_ai.provider.name": "openai", "gen_ai.usage.input_tokens": 11,
                                 "gen_ai.usage.output_tokens": 2})
    print("done", sys.argv[1])
    provider.shutdown()
    """
)


async def test_a_subprocess_exporting_over_otlp_lands_in_its_run(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(EXPORTER_SCRIPT)

    def run_subprocess(message: str, session: TracedSession) -> str:
        env = {"PATH": "/usr/bin:/bin", **session.env}
        done = subprocess.run(
            [sys.executable, str(script), message], env=env, capture_output=True, text=True, timeout=60, check=True
        )
        return done.stdout.strip()

    async with shared_clients(), opened(traced_agent(run_subprocess, flush_window=10)) as (session, log):
        reply = await session.send("x1")
    assert reply.text == "done x1"
    (call,) = of_type(log, "action.called")
    (usage,) = of_type(log, "usage")
    assert isinstance(call, ActionCalledEvent) and (call.name, call.input) == ("lookup", {"q": "x1"})
    assert isinstance(usage, UsageEvent) and (usage.input_tokens, usage.output_tokens) == (11, 2)
    assert {span.service for span in log.spans} == {"subprocess-agent"}


async def test_a_turn_without_spans_waits_the_window_and_is_warned_about() -> None:
    agent = traced_agent(lambda message: "plain", flush_window=0.2)
    async with opened(agent) as (session, log):
        assert isinstance(session, TracedSession)
        tracing = session.trace.tracing
        started = time.monotonic()
        await session.send("hi")
        assert 0.19 < time.monotonic() - started < 2
        endpoint = session.env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
    assert [e.type for e in log.events] == ["message", "message"] and log.spans == []
    (problem,) = tracing.problems()
    assert "1 traced agent session(s) sent no spans" in problem and endpoint in problem


def test_flush_window_must_be_positive() -> None:
    with pytest.raises(UsageError, match="flush_window= is seconds"):
        traced_agent(lambda m: m, flush_window=0)


async def test_user_message_is_first_and_reply_last() -> None:
    async with opened(traced_agent(instrumented_turn)) as (session, log):
        await session.send("A-9")
    first, last = log.events[0], log.events[-1]
    assert isinstance(first, MessageEvent) and first.role == "user" and first.text == "A-9"
    assert isinstance(last, MessageEvent) and last.role == "assistant"
