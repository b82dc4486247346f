"""Offline stand-in for OpenAI: niceeval.testing's local server answering like a model that uses the tools.

With OPENAI_API_KEY set, `offline_base_url()` returns None and the agent talks to the real API instead.
"""

from __future__ import annotations

import os
import re

from _shop import ORDERS

from niceeval.testing import LLMRequest, LLMServer, ReplyLike, ToolCall


def scripted_model(request: LLMRequest) -> ReplyLike:
    """Call a tool for the order in the conversation, then answer from the tool's result."""
    last = request.messages[-1]
    if last.role == "tool":
        failed = "error" in last.content.lower() or "cannot" in last.content
        return f"Sorry, I could not do that ({last.content})." if failed else f"Here you go: {last.content}."
    numbers = [n for m in request.messages if m.role == "user" for n in re.findall(r"\b\d{4}\b", m.content)]
    if not numbers:
        return "I can look up or cancel orders: which order number?"
    data = {"order_id": numbers[-1], "status": ORDERS.get(numbers[-1], "unknown")}
    if request.output_schema is not None:  # structured output asked for as a response format
        return data
    output_tool = next((t.name for t in request.tools if t.name.startswith("final_result")), None)
    if output_tool is not None:  # ... or as an output tool (pydantic-ai's default)
        return ToolCall(name=output_tool, arguments=data)
    tool = "cancel_order" if "cancel" in request.last_user_text.lower() else "lookup_order"
    return ToolCall(name=tool, arguments={"order_id": numbers[-1]})


def offline_base_url() -> str | None:
    """The local server's URL (started once per process), or None when a real API key is set."""
    if os.environ.get("OPENAI_API_KEY"):
        return None
    return LLMServer(scripted_model).start().base_url
