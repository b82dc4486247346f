"""openai_agents_agent: a real OpenAI Agents SDK agent over the Responses API against the local server."""

from __future__ import annotations

import pytest
from agents import Agent, function_tool
from agents.tracing import TracingProcessor, add_trace_processor
from pydantic import BaseModel

from niceeval._core.events import ActionCalledEvent, EventLog, UsageEvent
from niceeval.agents import openai_agents_agent
from niceeval.testing import LLMServer, Reply, TokenUsage, ToolCall
from tests.agents.agent_helpers import of_type, opened

pytestmark = pytest.mark.anyio
SEEN: list[list[str]] = []


@function_tool
def lookup(order_id: str) -> str:
    """Look up an order."""
    return f"order {order_id}: shipped"


@function_tool
def broken(order_id: str) -> str:
    """Always fails."""
    raise ValueError(f"database down for {order_id}")


class Status(BaseModel):
    status: str


def support(**overrides: object) -> Agent[None]:
    settings: dict[str, object] = {"tools": [lookup, broken], **overrides}
    return Agent(name="support", instructions="Help.", model="gpt-5-mini", **settings)  # type: ignore[arg-type]


async def test_tool_calls_are_recorded_with_their_input_and_output(llm_server: LLMServer) -> None:
    llm_server.push(ToolCall(name="lookup", arguments={"order_id": "42"}), "It shipped.")
    async with opened(openai_agents_agent(support(), base_url=llm_server.base_url)) as (session, log):
        reply = await session.send("Where is 42?")
    assert reply.text == "It shipped." and reply.status == "completed"
    (call,) = of_type(log, "action.called")
    assert isinstance(call, ActionCalledEvent)
    assert (call.id, call.name, call.input, call.status, call.output) == (
        "call_0001", "lookup", {"order_id": "42"}, "success", "order 42: shipped"
    )
    assert [r.api for r in llm_server.requests] == ["responses", "responses"]


async def test_a_raising_tool_is_failed_with_its_real_error(llm_server: LLMServer) -> None:
    llm_server.push(ToolCall(name="broken", arguments={"order_id": "7"}), "Sorry.")
    async with opened(openai_agents_agent(support(), base_url=llm_server.base_url)) as (session, log):
        await session.send("Cancel 7")
    (call,) = of_type(log, "action.called")
    assert isinstance(call, ActionCalledEvent)
    assert call.status == "failed"
    assert call.error == "ValueError: database down for 7"
    # The model still got the SDK's own message, as without niceeval.
    assert "error occurred" in llm_server.requests[1].messages[-1].content


async def test_usage_counts_cached_tokens_once_under_the_priced_model_name(llm_server: LLMServer) -> None:
    llm_server.push(Reply(text="hi", usage=TokenUsage(input_tokens=100, output_tokens=7, cached_tokens=60)))
    async with opened(openai_agents_agent(support(), base_url=llm_server.base_url)) as (session, log):
        await session.send("hello")
    (usage,) = of_type(log, "usage")
    assert isinstance(usage, UsageEvent)
    assert (usage.model, usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (
        "openai/gpt-5-mini", 40, 60, 7
    )


async def test_events_arrive_while_the_run_goes(llm_server: LLMServer) -> None:
    log_holder: list[EventLog] = []

    @function_tool
    def peek() -> str:
        """Look at what has been recorded so far."""
        SEEN.append([e.type for e in log_holder[0].events])
        return "ok"

    llm_server.push(ToolCall(name="peek"), "done")
    agent = openai_agents_agent(support(tools=[peek]), base_url=llm_server.base_url)
    async with opened(agent) as (session, log):
        log_holder.append(log)
        await session.send("go")
    # When the tool ran, the first model call's usage was already in the log, before the run ended.
    assert SEEN[-1] == ["message", "usage"]
    assert [e.type for e in log.events] == ["message", "usage", "action.called", "usage", "message"]


async def test_structured_output_per_send(llm_server: LLMServer) -> None:
    llm_server.push(Status(status="shipped"))
    async with opened(openai_agents_agent(support(), base_url=llm_server.base_url)) as (session, _log):
        reply = await session.send("Status?", output=Status)
    assert reply.data == Status(status="shipped")
    assert llm_server.requests[0].output_schema is not None


async def test_a_revived_session_continues_the_conversation(llm_server: LLMServer) -> None:
    llm_server.push("first", "second")
    agent = openai_agents_agent(support(), base_url=llm_server.base_url)
    async with opened(agent, "s") as (session, _log):
        await session.send("one")
    async with opened(agent, "s") as (session, _log):
        await session.send("two")
    assert [m.content for m in llm_server.requests[1].messages if m.role != "system"] == ["one", "first", "two"]


async def test_running_out_of_turns_fails_the_turn_with_an_error_event(llm_server: LLMServer) -> None:
    llm_server.set_script(lambda request: ToolCall(name="lookup", arguments={"order_id": "1"}))
    async with opened(openai_agents_agent(support(), base_url=llm_server.base_url, max_turns=2)) as (session, log):
        reply = await session.send("loop")
    assert reply.status == "failed"
    (error,) = of_type(log, "error")
    assert error.error_type == "MaxTurnsExceeded"  # type: ignore[union-attr]


async def test_runs_make_no_traces(llm_server: LLMServer) -> None:
    started: list[object] = []

    class Spy(TracingProcessor):
        def on_trace_start(self, trace: object) -> None:
            started.append(trace)

        def on_trace_end(self, trace: object) -> None: ...
        def on_span_start(self, span: object) -> None: ...
        def on_span_end(self, span: object) -> None: ...
        def shutdown(self) -> None: ...
        def force_flush(self) -> None: ...

    add_trace_processor(Spy())  # type: ignore[abstract]
    llm_server.push("hi")
    async with opened(openai_agents_agent(support(), base_url=llm_server.base_url)) as (session, _log):
        await session.send("hello")
    assert started == []
