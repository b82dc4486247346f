"""Offline stand-in for OpenAI: niceeval.testing's local server answering like a model that uses the tool.

With OPENAI_API_KEY set, `offline_base_url()` returns None and the bridge forwards to the real API instead.
"""

from __future__ import annotations

import os
import re

from niceeval.testing import LLMRequest, LLMServer, ReplyLike, ToolCall


def scripted_model(request: LLMRequest) -> ReplyLike:
    """Look up the order in the conversation, then answer from the tool's result."""
    last = request.messages[-1]
    if last.role == "tool":
        if "error" in last.content:
            return f"Sorry, I could not find that order ({last.content})."
        return f"Here you go: {last.content}."
    numbers = [n for m in request.messages if m.role == "user" for n in re.findall(r"\b\d{4}\b", m.content)]
    if not numbers:
        return "Which order number?"
    return ToolCall(name="lookup_order", arguments={"order_id": numbers[-1]})


def offline_base_url() -> str | None:
    """The local server's URL (started once per process), or None when a real API key is set."""
    if os.environ.get("OPENAI_API_KEY"):
        return None
    return LLMServer(scripted_model).start().base_url
