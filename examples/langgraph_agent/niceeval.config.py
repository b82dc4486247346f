"""A LangGraph agent under test. Offline by default (see _offline.py); `niceeval run` here."""

import os

from _offline import offline_base_url
from _shop import OrderStatus, cancel_order, lookup_order
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from niceeval import define_config
from niceeval.agents import langgraph_agent

TOOLS = [tool(lookup_order), tool(cancel_order)]
model = ChatOpenAI(model="gpt-5-mini", base_url=offline_base_url(), api_key=os.environ.get("OPENAI_API_KEY", "offline"))
chat = model.bind_tools(TOOLS)


class State(MessagesState):
    structured_response: OrderStatus | None


async def agent(state: State) -> dict[str, object]:
    return {"messages": [await chat.ainvoke(state["messages"])]}


async def respond(state: State) -> dict[str, object]:
    """The final answer as data too, as LangGraph's prebuilt agents do with a response format."""
    return {"structured_response": await model.with_structured_output(OrderStatus).ainvoke(state["messages"])}


builder = StateGraph(State)
builder.add_node("agent", agent)
builder.add_node("tools", ToolNode(TOOLS, handle_tool_errors=True))
builder.add_node("respond", respond)
builder.add_edge(START, "agent")
builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", "__end__": "respond"})
builder.add_edge("tools", "agent")

config = define_config(agent=langgraph_agent(builder.compile()), concurrency=4, timeout=60)
