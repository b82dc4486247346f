"""A live agent's tools answered from a recorded trace: the matching rule (exact, then in order, each recorded call
once), the pydantic-ai and OpenAI Agents SDK adapters answering through their framework's own API (the tool never
runs), an unrecorded call that errors naming the tool and its arguments, and an agent that cannot replay."""

from __future__ import annotations

from typing import Any

import pytest
from agents import Agent as SdkAgent
from agents import function_tool
from pydantic_ai import Agent

from niceeval._core.errors import UsageError
from niceeval._core.events import ActionCalledEvent
from niceeval.agents import function_agent, openai_agents_agent, pydantic_ai_agent
from niceeval.agents._runtime import check_replays_tools
from niceeval.agents._tool_replay import RecordedCall, RecordedToolFailure, RecordedTools, UnrecordedToolCall
from niceeval.testing import LLMServer, ToolCall
from tests.agents.agent_helpers import of_type, opened

RAN: list[str] = []
"""Every order id a real tool of these tests was called with."""


def lookup(order_id: str) -> str:
    """Look up an order."""
    RAN.append(order_id)
    return f"order {order_id}: live"


@function_tool
def sdk_lookup(order_id: str) -> str:
    """Look up an order."""
    RAN.append(order_id)
    return f"order {order_id}: live"


def recorded(*calls: tuple[str, dict[str, Any], Any]) -> RecordedTools:
    return RecordedTools([RecordedCall(name=name, arguments=args, output=output) for name, args, output in calls])


@pytest.fixture(autouse=True)
def no_tool_ran() -> Any:
    RAN.clear()
    yield
    assert RAN == []  # a replayed tool never runs


def test_an_exact_match_answers_first_then_the_next_call_of_that_tool_in_order() -> None:
    tools = recorded(
        ("lookup", {"order_id": "1"}, "one"), ("lookup", {"order_id": "2"}, "two"), ("refund", {"id": "1"}, "ok")
    )
    assert tools.answer("lookup", {"order_id": "2"}) == "two"  # exact, though recorded second
    assert tools.answer("lookup", {"order_id": "9"}) == "one"  # no exact match left: the next lookup in order
    assert tools.answer("refund", '{"id": "1"}') == "ok"  # arguments as JSON text compare as their value
    with pytest.raises(UnrecordedToolCall) as caught:
        tools.answer("lookup", {"order_id": "2"})  # each recorded call answers once
    assert str(caught.value).startswith(
        'the agent called lookup({"order_id": "2"}), which the recorded trace cannot answer: the trace recorded '
        "lookup 2 time(s) and every one answered an earlier call."
    )


def test_an_unrecorded_tool_names_the_tool_its_arguments_and_what_the_trace_recorded() -> None:
    with pytest.raises(UnrecordedToolCall) as caught:
        recorded(("lookup", {"order_id": "1"}, "one")).answer("cancel", {"order_id": "1"})
    assert str(caught.value) == (
        'the agent called cancel({"order_id": "1"}), which the recorded trace cannot answer: the trace never called '
        'cancel; it recorded: lookup({"order_id": "1"}). The replay answers tools only from the trace; to score the '
        "trace as it was recorded, write the case with `niceeval cases from-trace TRACE_ID --replay recorded`"
    )


def test_a_recorded_failure_is_raised_again() -> None:
    tools = RecordedTools([RecordedCall(name="lookup", arguments={}, output=None, error="database down")])
    with pytest.raises(RecordedToolFailure, match="lookup failed in the recorded trace: database down"):
        tools.answer("lookup", {})


def test_an_agent_that_cannot_replay_its_tools_is_refused_naming_it_and_the_alternative() -> None:
    with pytest.raises(UsageError, match=r"the agent FunctionAgent cannot have its tools answered from a trace.*"):
        check_replays_tools(function_agent(lambda message: message))
    with pytest.raises(UsageError, match=r"needs an agent.*--replay recorded"):
        check_replays_tools(None)


@pytest.mark.anyio
async def test_pydantic_ai_tools_are_answered_from_the_trace(llm_server: LLMServer) -> None:
    llm_server.push(ToolCall(name="lookup", arguments={"order_id": "42"}), "It shipped.")
    agent = Agent("openai:gpt-5-mini", tools=[lookup], defer_model_check=True)
    adapter = pydantic_ai_agent(agent, base_url=llm_server.base_url)
    replaying = adapter.replaying(recorded(("lookup", {"order_id": "42"}, "order 42: shipped")))
    async with opened(replaying) as (session, log):
        assert (await session.send("Where is 42?")).text == "It shipped."
    (call,) = of_type(log, "action.called")
    assert isinstance(call, ActionCalledEvent)
    assert (call.name, call.input, call.output, call.status) == (
        "lookup",
        {"order_id": "42"},
        "order 42: shipped",
        "success",
    )
    assert llm_server.requests[-1].messages[-1].content == "order 42: shipped"  # the model read the recorded output


@pytest.mark.anyio
async def test_a_pydantic_ai_call_the_trace_never_made_ends_the_turn_with_the_reason(llm_server: LLMServer) -> None:
    llm_server.push(ToolCall(name="lookup", arguments={"order_id": "7"}), "never sent")
    agent = Agent("openai:gpt-5-mini", tools=[lookup], defer_model_check=True)
    replaying = pydantic_ai_agent(agent, base_url=llm_server.base_url).replaying(recorded())
    async with opened(replaying) as (session, _log):
        with pytest.raises(UnrecordedToolCall, match=r'called lookup\(\{"order_id": "7"\}\).*no tool calls'):
            await session.send("Where is 7?")


@pytest.mark.anyio
async def test_openai_agents_tools_are_answered_from_the_trace_also_after_a_handoff(llm_server: LLMServer) -> None:
    llm_server.push(
        ToolCall(name="transfer_to_orders", arguments={}),
        ToolCall(name="sdk_lookup", arguments={"order_id": "42"}),
        "It shipped.",
    )
    orders = SdkAgent(name="orders", instructions="Orders.", model="gpt-5-mini", tools=[sdk_lookup])
    triage = SdkAgent(name="triage", instructions="Route.", model="gpt-5-mini", handoffs=[orders])
    adapter = openai_agents_agent(triage, base_url=llm_server.base_url)
    replaying = adapter.replaying(recorded(("sdk_lookup", {"order_id": "42"}, "order 42: shipped")))
    async with opened(replaying) as (session, log):
        assert (await session.send("Where is 42?")).text == "It shipped."
    (call,) = of_type(log, "action.called")
    assert isinstance(call, ActionCalledEvent)
    assert (call.name, call.output) == ("sdk_lookup", "order 42: shipped")
    assert orders.tools == [sdk_lookup] and triage.handoffs == [orders]  # the user's agents are left as they were


@pytest.mark.anyio
async def test_an_openai_agents_call_the_trace_never_made_ends_the_turn_with_the_reason(llm_server: LLMServer) -> None:
    llm_server.push(ToolCall(name="sdk_lookup", arguments={"order_id": "7"}), "never sent")
    agent = SdkAgent(name="orders", instructions="Orders.", model="gpt-5-mini", tools=[sdk_lookup])
    replaying = openai_agents_agent(agent, base_url=llm_server.base_url).replaying(recorded())
    async with opened(replaying) as (session, _log):
        with pytest.raises(UnrecordedToolCall, match=r'called sdk_lookup\(\{"order_id": "7"\}\)'):
            await session.send("Where is 7?")
