"""Real instrumentation against the local LLM server: each framework's spans give the same tool calls and tokens
as its native adapter for the same scripted conversation.

pydantic-ai with `instrument=True` (GenAI conventions), the OpenAI Agents SDK through OpenInference's
instrumentor, LangGraph through OpenInference's LangChain instrumentor.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from niceeval._core.events import ActionCalledEvent, EventLog, UsageEvent
from niceeval.agents import Agent, langgraph_agent, openai_agents_agent, pydantic_ai_agent, traced_agent
from niceeval.testing import LLMServer, Reply, TokenUsage, ToolCall
from tests.agents.agent_helpers import opened

pytestmark = pytest.mark.anyio
SCRIPT = (
    ToolCall(name="lookup", arguments={"order_id": "42"}),
    Reply(text="It shipped.", usage=TokenUsage(input_tokens=120, output_tokens=9, cached_tokens=20)),
)


def lookup(order_id: str) -> str:
    """Look up an order."""
    return f"order {order_id}: shipped"


def observed(log: EventLog) -> tuple[list[tuple[str, Any, str]], tuple[int, int, int], str]:
    """What the assertions read: the calls (name, input, status), the token split, the reply."""
    calls = [(e.name, e.input, e.status) for e in log.events if isinstance(e, ActionCalledEvent)]
    usage = [e for e in log.events if isinstance(e, UsageEvent)]
    tokens = (
        sum(u.input_tokens for u in usage),
        sum(u.cache_read_tokens for u in usage),
        sum(u.output_tokens for u in usage),
    )
    return calls, tokens, log.events[-1].text  # type: ignore[union-attr]


async def converse(server: LLMServer, agent: Agent) -> EventLog:
    server.push(*SCRIPT)
    async with opened(agent) as (session, log):
        await session.send("Where is order 42?")
    return log


async def test_pydantic_ai_instrumented_matches_the_native_adapter(llm_server: LLMServer) -> None:
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.models.openai import OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    native = await converse(
        llm_server,
        pydantic_ai_agent(
            PydanticAgent("openai:gpt-5-mini", tools=[lookup], defer_model_check=True), base_url=llm_server.base_url
        ),
    )
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=llm_server.base_url, api_key="k")
    model = OpenAIResponsesModel("gpt-5-mini", provider=OpenAIProvider(openai_client=client))
    instrumented = PydanticAgent(model, tools=[lookup])
    instrumented.instrument = True

    @traced_agent
    async def traced(message: str) -> str:
        return (await instrumented.run(message)).output

    log = await converse(llm_server, traced)
    await client.close()
    assert observed(log) == observed(native)
    assert observed(log)[0] == [("lookup", {"order_id": "42"}, "success")]
    (call,) = [e for e in log.events if isinstance(e, ActionCalledEvent)]
    assert call.output == "order 42: shipped" and call.id.startswith("call_")
    assert {e.model for e in log.events if isinstance(e, UsageEvent)} == {"openai/gpt-5-mini"}


@pytest.fixture
def openai_agents_instrumented() -> Iterator[None]:
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument()
    try:
        yield
    finally:
        instrumentor.uninstrument()


async def test_openai_agents_through_openinference_matches_the_native_adapter(
    llm_server: LLMServer, openai_agents_instrumented: None
) -> None:
    from agents import Agent as SdkAgent
    from agents import OpenAIResponsesModel, Runner, function_tool
    from openai import AsyncOpenAI

    native = await converse(
        llm_server,
        openai_agents_agent(
            SdkAgent(name="support", model="gpt-5-mini", tools=[function_tool(lookup)]), base_url=llm_server.base_url
        ),
    )
    client = AsyncOpenAI(base_url=llm_server.base_url, api_key="k")
    model = OpenAIResponsesModel(model="gpt-5-mini", openai_client=client)
    agent = SdkAgent(name="support", model=model, tools=[function_tool(lookup)])

    @traced_agent
    async def traced(message: str) -> str:
        return str((await Runner.run(agent, message)).final_output)

    log = await converse(llm_server, traced)
    await client.close()
    assert observed(log) == observed(native)
    assert observed(log)[0] == [("lookup", {"order_id": "42"}, "success")]


@pytest.fixture
def langchain_instrumented() -> Iterator[None]:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    instrumentor = LangChainInstrumentor()
    instrumentor.instrument()
    try:
        yield
    finally:
        instrumentor.uninstrument()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def graph(server: LLMServer, http: httpx.AsyncClient) -> Any:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    tools = [tool(lookup)]
    model = ChatOpenAI(model="gpt-5-mini", base_url=server.base_url, api_key="k", http_async_client=http)  # type: ignore[arg-type]

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.bind_tools(tools).ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", "__end__": "__end__"})
    builder.add_edge("tools", "agent")
    return builder.compile()


async def test_langgraph_through_openinference_matches_the_native_adapter(
    llm_server: LLMServer, http: httpx.AsyncClient, langchain_instrumented: None
) -> None:
    native = await converse(llm_server, langgraph_agent(graph(llm_server, http)))
    compiled = graph(llm_server, http)

    @traced_agent
    async def traced(message: str) -> str:
        state = await compiled.ainvoke({"messages": [{"role": "user", "content": message}]})
        return str(state["messages"][-1].content)

    log = await converse(llm_server, traced)
    assert observed(log) == observed(native)
    assert observed(log)[0] == [("lookup", {"order_id": "42"}, "success")]
