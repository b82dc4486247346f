"""The agent under test: a plain OpenAI SDK tool loop with one tool. It knows nothing of niceeval.

It takes its client from the caller, as most agents can be made to, so the eval points it at the bridge.
"""

from __future__ import annotations

import json
from typing import Any

from openai import AsyncOpenAI

SYSTEM = "You answer questions about orders. Use lookup_order; never guess an order's status."
ORDERS = {"1234": "shipped", "5678": "processing"}
TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look up where an order is.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string", "description": 'The order number, e.g. "1234".'}},
                "required": ["order_id"],
            },
        },
    }
]


def lookup_order(order_id: str) -> dict[str, str]:
    if order_id not in ORDERS:
        raise LookupError(f"no order {order_id}")
    return {"order_id": order_id, "status": ORDERS[order_id]}


def run_tool(name: str, arguments: str) -> str:
    """The tool's result for the model: its JSON, or `{"error": ...}` when it fails."""
    try:
        if name != "lookup_order":
            raise LookupError(f"no tool {name}")
        return json.dumps(lookup_order(**json.loads(arguments)))
    except Exception as exc:
        return json.dumps({"error": str(exc)})


async def answer(client: AsyncOpenAI, conversation: list[dict[str, str]], *, max_steps: int = 5) -> str:
    """Call the model, run the tools it asks for, repeat until it answers in words."""
    messages: list[Any] = [{"role": "system", "content": SYSTEM}, *conversation]
    for _ in range(max_steps):
        response = await client.chat.completions.create(model="gpt-5-mini", messages=messages, tools=TOOLS)
        reply = response.choices[0].message
        if not reply.tool_calls:
            return reply.content or ""
        messages.append(reply.model_dump(exclude_none=True))
        for call in reply.tool_calls:
            if call.type == "function":
                result = run_tool(call.function.name, call.function.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return "Sorry, I could not finish that."
