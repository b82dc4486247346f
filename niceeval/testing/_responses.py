"""The OpenAI Responses dialect (`POST /v1/responses`): request parsing and `response` bodies.

Errors use Chat Completions' shape (`_openai.error_body`), as the real API does. The server keeps no state:
a request that continues a stored response (`previous_response_id`, `conversation`) gets only what it sends.
"""

from __future__ import annotations

import json
import time
from typing import Any

from niceeval.testing._openai import json_arguments, list_field
from niceeval.testing._replies import Reply, ToolCall, resolved_usage
from niceeval.testing._request import LLMRequest, Message, RequestShapeError, Tool, shape_checked, text_of, tool_of

CALL_PREFIX = "call_"
RESPONSE_PREFIX = "resp_"


def parse_request(body: dict[str, Any], headers: dict[str, str]) -> LLMRequest:
    """The neutral view of a `POST /v1/responses` body.

    `instructions` becomes a leading `system` message; `function_call` items join the assistant message
    before them as tool calls (their `call_id` is the call's id), and each `function_call_output` item becomes
    a `tool` message. Other items (reasoning, references) are left out; they stay in `LLMRequest.body`.

    Raises:
        RequestShapeError: The body is not a Responses request.
    """
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise RequestShapeError("`model` is required and must be a string")
    raw_input = body.get("input")
    if isinstance(raw_input, str):
        raw_input = [{"role": "user", "content": raw_input}]
    if not isinstance(raw_input, list) or not raw_input:
        raise RequestShapeError("`input` is required: a string or a non-empty array of items")
    instructions = body.get("instructions")
    messages = [Message(role="system", content=instructions)] if isinstance(instructions, str) and instructions else []
    with shape_checked():
        for i, raw in enumerate(raw_input):
            _add_item(messages, raw, f"input[{i}]")
        return LLMRequest(
            provider="openai",
            api="responses",
            model=model,
            messages=messages,
            tools=[_tool(raw, f"tools[{i}]") for i, raw in enumerate(list_field(body, "tools"))],
            response_format=_response_format(body.get("text")),
            body=body,
            headers=headers,
        )


def render(reply: Reply, request: LLMRequest, response_id: str) -> dict[str, Any]:
    """The `response` body for a resolved reply (tool call ids and usage filled in)."""
    return response_body(reply, request, response_id, output_items(reply, response_id), status="completed")


def output_items(reply: Reply, response_id: str) -> list[dict[str, Any]]:
    """The `output` items: an assistant message (unless the reply is only tool calls), then one item per call."""
    suffix = response_id.removeprefix(RESPONSE_PREFIX)
    items: list[dict[str, Any]] = []
    if reply.content or not reply.tool_calls:
        items.append(
            {
                "id": f"msg_{suffix}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.content or "", "annotations": [], "logprobs": []}],
            }
        )
    items += [
        {
            "id": f"fc_{call.id}",
            "type": "function_call",
            "status": "completed",
            "call_id": call.id,
            "name": call.name,
            "arguments": json.dumps(call.arguments),
        }
        for call in reply.tool_calls
    ]
    return items


def response_body(
    reply: Reply, request: LLMRequest, response_id: str, output: list[dict[str, Any]], *, status: str
) -> dict[str, Any]:
    """A `response` object; `usage` is filled in only once it is `completed` (as the API streams it)."""
    usage = resolved_usage(reply)
    now = int(time.time())
    body = request.body
    return {
        "id": response_id,
        "object": "response",
        "created_at": now,
        "completed_at": now if status == "completed" else None,
        "status": status,
        "model": request.model,
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "instructions": body.get("instructions"),
        "previous_response_id": body.get("previous_response_id"),
        "text": body.get("text") or {"format": {"type": "text"}},
        "error": None,
        "incomplete_details": None,
        "metadata": body.get("metadata") or {},
        "temperature": body.get("temperature", 1.0),
        "top_p": body.get("top_p", 1.0),
        "service_tier": "default",
        "usage": {
            "input_tokens": usage.input_tokens,
            "input_tokens_details": {"cached_tokens": usage.cached_tokens, "cache_write_tokens": 0},
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.input_tokens + usage.output_tokens,
        }
        if status == "completed"
        else None,
    }


def _add_item(messages: list[Message], raw: object, where: str) -> None:
    if not isinstance(raw, dict):
        raise RequestShapeError(f"{where} must be an object")
    kind = raw.get("type", "message")
    if kind == "message":
        messages.append(Message.model_validate({"role": raw.get("role"), "content": text_of(raw.get("content"))}))
    elif kind == "function_call":
        call = _function_call(raw, where)
        last = messages[-1] if messages else None
        if last is not None and last.role == "assistant":
            messages[-1] = last.model_copy(update={"tool_calls": [*last.tool_calls, call]})
        else:
            messages.append(Message(role="assistant", tool_calls=[call]))
    elif kind == "function_call_output":
        output = raw.get("output")
        content = output if isinstance(output, str) else text_of(output)
        messages.append(Message(role="tool", content=content, tool_call_id=raw.get("call_id")))


def _function_call(raw: dict[str, Any], where: str) -> ToolCall:
    arguments = json_arguments(raw.get("arguments"), f"{where}.arguments")
    return ToolCall.model_validate({"id": raw.get("call_id"), "name": raw.get("name"), "arguments": arguments})


def _tool(raw: object, where: str) -> Tool:
    if not isinstance(raw, dict):
        raise RequestShapeError(f"{where} must be an object like {{'type': 'function', 'name': ...}}")
    # Built-in tools (web_search, file_search, ...) have a type and no name: the type names them.
    return tool_of(raw.get("name") or raw.get("type"), raw.get("description"), raw.get("parameters"))


def _response_format(raw: object) -> dict[str, Any] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise RequestShapeError("`text` must be an object")
    fmt = raw.get("format")
    if fmt is None:
        return None
    if not isinstance(fmt, dict):
        raise RequestShapeError("`text.format` must be an object")
    return None if fmt.get("type") == "text" else fmt
