"""pydantic_ai_agent: a real pydantic-ai agent (Responses and Chat Completions) against the local server."""

from __future__ import annotations

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, ModelRetry

from niceeval._core.errors import UsageError
from niceeval._core.events import ActionCalledEvent, EventLog, UsageEvent
from niceeval.agents import pydantic_ai_agent
from niceeval.testing import LLMServer, Reply, TokenUsage, ToolCall
from tests.agents.agent_helpers import of_type, opened

pytestmark = pytest.mark.anyio


class Status(BaseModel):
    status: str


def lookup(order_id: str) -> str:
    """Look up an order."""
    return f"order {order_id}: shipped"


def refuse(order_id: str) -> str:
    """Asks the model to try something else."""
    raise ModelRetry(f"order {order_id} has shipped")


def broken(order_id: str) -> str:
    """Always fails."""
    raise ValueError(f"database down for {order_id}")


def support(model: str = "openai:gpt-5-mini", tools: list[object] | None = None) -> Agent[None, str]:
    chosen = tools if tools is not None else [lookup, refuse, broken]
    return Agent(model, instructions="Help.", tools=chosen, defer_model_check=True)  # type: ignore[arg-type]


async def test_tool_calls_are_recorded_with_their_input_and_output(llm_server: LLMServer) -> None:
    llm_server.push(ToolCall(name="lookup", arguments={"order_id": "42"}), "It shipped.")
    async with opened(pydantic_ai_agent(support(), base_url=llm_server.base_url)) as (session, log):
        reply = await session.send("Where is 42?")
    assert reply.text == "It shipped."
    (call,) = of_type(log, "action.called")
    assert isinstance(call, ActionCalledEvent)
    assert (call.id, call.name, call.input, call.status, call.output) == (
        "call_0001",
        "lookup",
        {"order_id": "42"},
        "success",
        "order 42: shipped",
    )
    assert [r.api for r in llm_server.requests] == ["responses", "responses"]


async def test_openai_chat_models_go_over_chat_completions(llm_server: LLMServer) -> None:
    llm_server.push("hi")
    async with opened(pydantic_ai_agent(support("openai-chat:gpt-5-mini"), base_url=llm_server.base_url)) as (s, _):
        await s.send("hello")
    assert [r.api for r in llm_server.requests] == ["chat.completions"]


async def test_a_model_retry_is_a_failed_call_with_its_message(llm_server: LLMServer) -> None:
    llm_server.push(ToolCall(name="refuse", arguments={"order_id": "7"}), "Sorry.")
    async with opened(pydantic_ai_agent(support(), base_url=llm_server.base_url)) as (session, log):
        await session.send("Cancel 7")
    (call,) = of_type(log, "action.called")
    assert isinstance(call, ActionCalledEvent)
    assert call.status == "failed" and call.error == "retried: order 7 has shipped"


async def test_a_raising_tool_is_failed_with_its_exception_and_the_turn_raises(llm_server: LLMServer) -> None:
    llm_server.push(ToolCall(name="broken", arguments={"order_id": "7"}))
    async with opened(pydantic_ai_agent(support(), base_url=llm_server.base_url)) as (session, log):
        with pytest.raises(ValueError, match="database down"):
            await session.send("Cancel 7")
    (call,) = of_type(log, "action.called")
    assert isinstance(call, ActionCalledEvent)
    assert (call.status, call.error) == ("failed", "ValueError: database down for 7")


async def test_usage_counts_cached_tokens_once_under_the_priced_model_name(llm_server: LLMServer) -> None:
    llm_server.push(Reply(text="hi", usage=TokenUsage(input_tokens=100, output_tokens=7, cached_tokens=60)))
    async with opened(pydantic_ai_agent(support(), base_url=llm_server.base_url)) as (session, log):
        await session.send("hello")
    (usage,) = of_type(log, "usage")
    assert isinstance(usage, UsageEvent)
    assert (usage.model, usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (
        "openai/gpt-5-mini",
        40,
        60,
        7,
    )


async def test_events_arrive_while_the_run_goes(llm_server: LLMServer) -> None:
    holder: list[EventLog] = []
    seen: list[list[str]] = []

    def peek() -> str:
        """Look at what has been recorded so far."""
        seen.append([e.type for e in holder[0].events])
        return "ok"

    llm_server.push(ToolCall(name="peek"), "done")
    async with opened(pydantic_ai_agent(support(tools=[peek]), base_url=llm_server.base_url)) as (session, log):
        holder.append(log)
        await session.send("go")
    assert seen == [["message", "usage"]]
    assert [e.type for e in log.events] == ["message", "usage", "action.called", "usage", "message"]


async def test_structured_output_per_send_through_the_output_tool(llm_server: LLMServer) -> None:
    llm_server.set_script(
        lambda request: ToolCall(
            name=next(t.name for t in request.tools if t.name.startswith("final_result")),
            arguments={"status": "shipped"},
        )
    )
    async with opened(pydantic_ai_agent(support(), base_url=llm_server.base_url)) as (session, log):
        reply = await session.send("Status?", output=Status)
    assert reply.data == Status(status="shipped")
    assert of_type(log, "action.called") == []  # the output tool is how the answer arrives, not a tool call


async def test_a_revived_session_continues_the_conversation(llm_server: LLMServer) -> None:
    llm_server.push("first", "second")
    agent = pydantic_ai_agent(support(), base_url=llm_server.base_url)
    async with opened(agent, "s") as (session, _log):
        await session.send("one")
    async with opened(agent, "s") as (session, _log):
        await session.send("two")
    assert [m.content for m in llm_server.requests[1].messages if m.role != "system"] == ["one", "first", "two"]


def test_base_url_with_a_non_openai_model_says_what_to_do() -> None:
    with pytest.raises(UsageError, match="drop base_url"):
        pydantic_ai_agent(support("anthropic:claude-haiku-4-5"), base_url="http://127.0.0.1:9/v1")


async def test_model_runs_the_agent_with_another_model_without_copying_it(llm_server: LLMServer) -> None:
    llm_server.push("a", "b")
    agent = support("openai:gpt-5-mini")
    for variant in ("openai-chat:gpt-4o-mini", "openai:gpt-5"):
        async with opened(pydantic_ai_agent(agent, base_url=llm_server.base_url, model=variant)) as (s, _):
            await s.send("hello")
    assert [(r.api, r.body["model"]) for r in llm_server.requests] == [
        ("chat.completions", "gpt-4o-mini"),
        ("responses", "gpt-5"),
    ]
    assert agent.model == "openai:gpt-5-mini"  # the user's agent is untouched
