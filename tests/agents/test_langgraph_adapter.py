"""langgraph_agent: a real LangGraph graph with a ChatOpenAI model against the local server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel

from niceeval._core.events import ActionCalledEvent, EventLog, UsageEvent
from niceeval.agents import langgraph_agent
from niceeval.testing import LLMServer, Reply, TokenUsage, ToolCall
from tests.agents.agent_helpers import of_type, opened

pytestmark = pytest.mark.anyio
SEEN: list[list[str]] = []
LOGS: list[EventLog] = []


class Status(BaseModel):
    status: str


@tool
def lookup(order_id: str) -> str:
    """Look up an order."""
    return f"order {order_id}: shipped"


@tool
def broken(order_id: str) -> str:
    """Always fails."""
    raise ValueError(f"database down for {order_id}")


@tool
def peek() -> str:
    """Look at what has been recorded so far."""
    SEEN.append([e.type for e in LOGS[-1].events])
    return "ok"


class State(MessagesState):
    structured_response: Any


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def graph(server: LLMServer, http: httpx.AsyncClient, *, checkpointer: Any = None, structured: bool = False) -> Any:
    tools = [lookup, broken, peek]
    model = ChatOpenAI(model="gpt-5-mini", base_url=server.base_url, api_key="k", http_async_client=http)  # type: ignore[arg-type]

    async def agent(state: State) -> dict[str, Any]:
        return {"messages": [await model.bind_tools(tools).ainvoke(state["messages"])]}

    async def respond(state: State) -> dict[str, Any]:
        return {"structured_response": await model.with_structured_output(Status).ainvoke(state["messages"])}

    builder = StateGraph(State)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools, handle_tool_errors=True))
    builder.add_node("respond", respond)
    builder.add_edge(START, "agent")
    done = "respond" if structured else "__end__"
    builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", "__end__": done})
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


async def test_tool_calls_are_recorded_with_the_models_call_id(llm_server: LLMServer, http: httpx.AsyncClient) -> None:
    llm_server.push(ToolCall(name="lookup", arguments={"order_id": "42"}), "It shipped.")
    async with opened(langgraph_agent(graph(llm_server, http))) as (session, log):
        reply = await session.send("Where is 42?")
    assert reply.text == "It shipped."
    (call,) = of_type(log, "action.called")
    assert isinstance(call, ActionCalledEvent)
    assert (call.id, call.name, call.input, call.status, call.output) == (
        "call_0001", "lookup", {"order_id": "42"}, "success", "order 42: shipped"
    )


async def test_a_raising_tool_is_failed_with_its_exception(llm_server: LLMServer, http: httpx.AsyncClient) -> None:
    llm_server.push(ToolCall(name="broken", arguments={"order_id": "7"}), "Sorry.")
    async with opened(langgraph_agent(graph(llm_server, http))) as (session, log):
        await session.send("Cancel 7")
    (call,) = of_type(log, "action.called")
    assert isinstance(call, ActionCalledEvent)
    assert (call.status, call.error) == ("failed", "ValueError: database down for 7")


async def test_usage_counts_cached_tokens_once_under_the_priced_model_name(
    llm_server: LLMServer, http: httpx.AsyncClient
) -> None:
    llm_server.push(Reply(text="hi", usage=TokenUsage(input_tokens=100, output_tokens=7, cached_tokens=60)))
    async with opened(langgraph_agent(graph(llm_server, http))) as (session, log):
        await session.send("hello")
    (usage,) = of_type(log, "usage")
    assert isinstance(usage, UsageEvent)
    assert (usage.model, usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (
        "openai/gpt-5-mini", 40, 60, 7
    )


async def test_events_arrive_while_the_graph_runs(llm_server: LLMServer, http: httpx.AsyncClient) -> None:
    llm_server.push(ToolCall(name="peek"), "done")
    async with opened(langgraph_agent(graph(llm_server, http))) as (session, log):
        LOGS.append(log)
        await session.send("go")
    assert SEEN[-1] == ["message", "usage"]
    assert [e.type for e in log.events] == ["message", "usage", "action.called", "usage", "message"]


async def test_structured_response_is_the_turns_data(llm_server: LLMServer, http: httpx.AsyncClient) -> None:
    llm_server.push("It shipped.", Status(status="shipped"))
    async with opened(langgraph_agent(graph(llm_server, http, structured=True))) as (session, _log):
        reply = await session.send("Status?", output=Status)
    assert reply.text == "It shipped." and reply.data == Status(status="shipped")


async def test_without_a_checkpointer_the_adapter_keeps_the_conversation(
    llm_server: LLMServer, http: httpx.AsyncClient
) -> None:
    llm_server.push("first", "second")
    agent = langgraph_agent(graph(llm_server, http))
    async with opened(agent, "s") as (session, _log):
        await session.send("one")
    async with opened(agent, "s") as (session, _log):
        await session.send("two")
    assert [m.content for m in llm_server.requests[1].messages] == ["one", "first", "two"]


async def test_with_a_checkpointer_the_session_is_the_thread(llm_server: LLMServer, http: httpx.AsyncClient) -> None:
    llm_server.push("first", "second", "other")
    agent = langgraph_agent(graph(llm_server, http, checkpointer=InMemorySaver()))
    async with opened(agent, "s") as (session, _log):
        await session.send("one")
        await session.send("two")
    async with opened(agent, "t") as (session, _log):
        await session.send("three")
    assert [m.content for m in llm_server.requests[1].messages] == ["one", "first", "two"]
    assert [m.content for m in llm_server.requests[2].messages] == ["three"]


async def test_langsmith_tracing_is_off_inside_runs_even_when_the_environment_asks(
    llm_server: LLMServer, http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langsmith.utils import tracing_is_enabled

    monkeypatch.setenv("LANGSMITH_TRACING", "true")
    monkeypatch.setenv("LANGSMITH_API_KEY", "not-used")
    assert tracing_is_enabled()
    seen: list[object] = []

    async def probe(state: State) -> dict[str, Any]:
        seen.append(tracing_is_enabled())
        return {"messages": []}

    builder = StateGraph(State)
    builder.add_node("probe", probe)
    builder.add_edge(START, "probe")
    async with opened(langgraph_agent(builder.compile())) as (session, _log):
        await session.send("hi")
    assert seen == [False]
