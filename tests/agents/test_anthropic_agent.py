"""`anthropic_agent`: the Messages API tool loop, through the real SDK, against the local server."""

from __future__ import annotations

import pytest
from agent_helpers import model_agent, of_type, opened
from pydantic import BaseModel

from niceeval._core.errors import UsageError
from niceeval._core.events import ActionCalledEvent, ErrorEvent, UsageEvent
from niceeval.agents import ModelAgent, anthropic_agent
from niceeval.testing import LLMServer, Reply, TokenUsage, ToolCall

pytestmark = pytest.mark.anyio
MODEL = "anthropic/claude-haiku-4-5"


class Listing(BaseModel):
    title: str
    nightly_rate: int


def search_listings(city: str) -> list[dict[str, object]]:
    """Find the listings in a city.

    Args:
        city: City name.
    """
    return [{"title": "Alfama loft", "nightly_rate": 120}]


def book(listing: str) -> str:
    """Book a listing."""
    raise LookupError(f"no listing {listing}")


def agent(server: LLMServer, **options: object) -> ModelAgent:
    return model_agent(anthropic_agent, MODEL, server.anthropic_base_url, **options)


async def test_tool_use_then_tool_result_then_the_answer(llm_server: LLMServer) -> None:
    llm_server.push(
        Reply(text="Searching.", tool_calls=[ToolCall(name="search_listings", arguments={"city": "Lisbon"})]),
        "The Alfama loft, 120 a night.",
    )
    async with opened(agent(llm_server, system="You manage rentals.", tools=[search_listings])) as (session, log):
        reply = await session.send("What is there in Lisbon?")

    assert reply.text == "The Alfama loft, 120 a night."
    (action,) = of_type(log, "action.called")
    assert isinstance(action, ActionCalledEvent)
    assert (action.id, action.name, action.input, action.status) == (
        "toolu_0001",
        "search_listings",
        {"city": "Lisbon"},
        "success",
    )
    first, second = llm_server.requests
    assert first.body["max_tokens"] == 4096 and first.body["system"] == "You manage rentals."
    assert first.tools[0].parameters["properties"]["city"]["description"] == "City name."
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "tool"]
    result = second.body["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_0001" and "is_error" not in result


async def test_a_failing_tool_is_sent_back_as_an_error_result(llm_server: LLMServer) -> None:
    llm_server.push(ToolCall(name="book", arguments={"listing": "x"}), "That listing does not exist.")
    async with opened(agent(llm_server, tools=[book])) as (session, log):
        reply = await session.send("Book x")

    assert reply.status == "completed"
    (action,) = of_type(log, "action.called")
    assert (
        isinstance(action, ActionCalledEvent)
        and action.status == "failed"
        and action.error == "LookupError: no listing x"
    )
    result = llm_server.requests[1].body["messages"][2]["content"][0]
    assert result["is_error"] is True and result["content"] == "Error: LookupError: no listing x"


async def test_structured_output_is_the_input_of_a_forced_tool(llm_server: LLMServer) -> None:
    llm_server.push(ToolCall(name="final_answer", arguments={"title": "Alfama loft", "nightly_rate": 120}), "Noted.")
    async with opened(agent(llm_server, output=Listing)) as (session, _):
        reply = await session.send("Describe the loft")
        later = await session.send("Thanks", output=None)

    assert reply.data == Listing(title="Alfama loft", nightly_rate=120)
    assert reply.text == '{"title": "Alfama loft", "nightly_rate": 120}'
    first, second = llm_server.requests
    assert first.body["tool_choice"] == {"type": "tool", "name": "final_answer"}
    assert first.tools[0].parameters["required"] == ["title", "nightly_rate"]
    # The forced call is answered before the next user text, as the API requires.
    user = second.body["messages"][2]
    assert user["content"][0] == {"type": "tool_result", "tool_use_id": "toolu_0001", "content": "Received."}
    assert user["content"][1] == {"type": "text", "text": "Thanks"}
    assert later.status == "failed"  # the agent's output=Listing still applies to "Noted."


async def test_with_tools_structured_output_lets_the_model_use_them_first(llm_server: LLMServer) -> None:
    llm_server.push(
        ToolCall(name="search_listings", arguments={"city": "Lisbon"}),
        ToolCall(name="final_answer", arguments={"title": "Alfama loft", "nightly_rate": 120}),
    )
    async with opened(agent(llm_server, tools=[search_listings], output=Listing)) as (session, log):
        reply = await session.send("Cheapest in Lisbon?")

    assert reply.data == Listing(title="Alfama loft", nightly_rate=120)
    assert llm_server.requests[0].body["tool_choice"] == {"type": "any"}
    assert [t.name for t in llm_server.requests[0].tools] == ["search_listings", "final_answer"]
    assert [e.name for e in of_type(log, "action.called") if isinstance(e, ActionCalledEvent)] == ["search_listings"]


async def test_structured_output_that_does_not_validate_fails_the_turn(llm_server: LLMServer) -> None:
    llm_server.push(ToolCall(name="final_answer", arguments={"title": "Loft"}))
    async with opened(agent(llm_server, output=Listing)) as (session, log):
        reply = await session.send("Describe the loft")

    assert reply.status == "failed" and reply.data is None
    (error,) = of_type(log, "error")
    assert isinstance(error, ErrorEvent) and "not a valid Listing" in error.message


async def test_usage_keeps_cache_reads_apart(llm_server: LLMServer) -> None:
    llm_server.push(Reply(text="hi", usage=TokenUsage(input_tokens=500, output_tokens=7, cached_tokens=300)))
    async with opened(agent(llm_server)) as (session, log):
        await session.send("hello")

    (usage,) = of_type(log, "usage")
    assert isinstance(usage, UsageEvent)
    assert (usage.model, usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (MODEL, 200, 300, 7)


async def test_after_max_steps_the_next_message_joins_the_open_user_turn(llm_server: LLMServer) -> None:
    llm_server.push(ToolCall(name="search_listings", arguments={"city": "Porto"}), "Porto has a studio.")
    async with opened(agent(llm_server, tools=[search_listings], max_steps=1)) as (session, log):
        stopped = await session.send("Search Porto")
        reply = await session.send("So?")

    assert stopped.status == "failed" and reply.text == "Porto has a studio."
    roles = [m["role"] for m in llm_server.requests[1].body["messages"]]
    assert roles == ["user", "assistant", "user"]
    blocks = llm_server.requests[1].body["messages"][2]["content"]
    assert [b["type"] for b in blocks] == ["tool_result", "text"]
    assert len(of_type(log, "error")) == 1


async def test_a_tool_named_like_the_output_tool_is_refused() -> None:
    def final_answer(text: str) -> str:
        """Clashes."""
        return text

    with pytest.raises(UsageError, match="reserved for structured output"):
        anthropic_agent(MODEL, tools=[final_answer])
    with pytest.raises(UsageError, match="use openai_agent"):
        anthropic_agent("openai/gpt-5-mini")
