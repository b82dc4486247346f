"""Agents for the bridge tests: hand-written tool loops over the real `openai` SDK, as a user would write them."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from openai import AsyncOpenAI

from niceeval.agents import BridgeAgent, BridgeSession, bridge_agent

PARAMETERS = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
CHAT_TOOLS: Any = [{"type": "function", "function": {"name": "lookup", "parameters": PARAMETERS}}]
RESPONSES_TOOLS: Any = [{"type": "function", "name": "lookup", "parameters": PARAMETERS, "strict": False}]
Tool = Callable[[dict[str, Any]], str]
MAX_ROUNDS = 10
"""A loop of tool calls ends here: a scripted model that never stops fails the test instead of spinning."""


def lookup(arguments: dict[str, Any]) -> str:
    return json.dumps({"order_id": arguments.get("order_id"), "status": "shipped"})


async def chat_loop(client: AsyncOpenAI, message: str, *, stream: bool, tool: Tool, seen: list[Any]) -> str:
    """Chat Completions until the model answers without tools; every chunk or response goes into `seen`."""
    messages: list[Any] = [{"role": "user", "content": message}]
    for _ in range(MAX_ROUNDS):
        if stream:
            text, calls = "", {}
            async for chunk in await client.chat.completions.create(
                model="gpt-5-mini", messages=messages, tools=CHAT_TOOLS, stream=True
            ):
                seen.append(chunk)
                for choice in chunk.choices:
                    text += choice.delta.content or ""
                    for piece in choice.delta.tool_calls or []:
                        call = calls.setdefault(piece.index, {"id": "", "name": "", "arguments": ""})
                        call["id"] = piece.id or call["id"]
                        call["name"] = (piece.function and piece.function.name) or call["name"]
                        call["arguments"] += (piece.function and piece.function.arguments) or ""
            requested = list(calls.values())
        else:
            response = await client.chat.completions.create(model="gpt-5-mini", messages=messages, tools=CHAT_TOOLS)
            seen.append(response)
            reply = response.choices[0].message
            text = reply.content or ""
            requested = [
                {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                for c in reply.tool_calls or []
                if c.type == "function"
            ]
        if not requested:
            return text
        messages.append(
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in requested
                ],
            }
        )
        for call in requested:
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": tool(json.loads(call["arguments"]))}
            )
    raise AssertionError(f"the model still asked for tools after {MAX_ROUNDS} rounds")


async def responses_loop(client: AsyncOpenAI, message: str, *, stream: bool, tool: Tool, seen: list[Any]) -> str:
    """The Responses API until the model answers without tools."""
    items: list[Any] = [{"role": "user", "content": message}]
    for _ in range(MAX_ROUNDS):
        if stream:
            async with client.responses.stream(model="gpt-5-mini", input=items, tools=RESPONSES_TOOLS) as events:
                async for event in events:
                    seen.append(event)
                response = await events.get_final_response()
        else:
            response = await client.responses.create(model="gpt-5-mini", input=items, tools=RESPONSES_TOOLS)
            seen.append(response)
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text
        for call in calls:
            items.append(
                {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments}
            )
            items.append(
                {"type": "function_call_output", "call_id": call.call_id, "output": tool(json.loads(call.arguments))}
            )
    raise AssertionError(f"the model still asked for tools after {MAX_ROUNDS} rounds")


def looping(
    upstream: str, api: str = "chat", *, stream: bool = False, tool: Tool = lookup, seen: list[Any] | None = None
) -> BridgeAgent:
    """A bridged agent running a hand-written tool loop over `api`, its client pointed at the session's URL."""
    loop = chat_loop if api == "chat" else responses_loop

    async def agent(message: str, session: BridgeSession) -> str:
        async with AsyncOpenAI(base_url=session.base_url, api_key=session.api_key, max_retries=0) as client:
            return await loop(client, message, stream=stream, tool=tool, seen=seen if seen is not None else [])

    return bridge_agent(agent, upstream=upstream)
