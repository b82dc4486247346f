"""The OpenAI Chat Completions dialect: request parsing, `chat.completion` bodies and error bodies."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from niceeval.testing._replies import Reply, ToolCall, resolved_usage
from niceeval.testing._request import LLMRequest, Message, RequestShapeError, Tool, shape_checked, text_of, tool_of

CALL_PREFIX = "call_"
RESPONSE_PREFIX = "chatcmpl-"

# (type, code) per status, as the real API sends them; the SDK picks its exception class from the status.
_ERROR_KINDS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def parse_request(body: dict[str, Any], headers: dict[str, str]) -> LLMRequest:
    """The neutral view of a `POST /v1/chat/completions` body.

    Raises:
        RequestShapeError: The body is not a chat completion request.
    """
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise RequestShapeError("`model` is required and must be a string")
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise RequestShapeError("`messages` is required and must be a non-empty array")
    with shape_checked():
        return LLMRequest(
            provider="openai",
            api="chat.completions",
            model=model,
            messages=[_message(raw, f"messages[{i}]") for i, raw in enumerate(raw_messages)],
            tools=[_tool(raw, f"tools[{i}]") for i, raw in enumerate(list_field(body, "tools"))],
            response_format=_response_format(body.get("response_format")),
            body=body,
            headers=headers,
        )


def render(reply: Reply, request: LLMRequest, response_id: str) -> dict[str, Any]:
    """The `chat.completion` body for a resolved reply (tool call ids and usage filled in)."""
    usage = resolved_usage(reply)
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.content if reply.content is not None or reply.tool_calls else "",
        "refusal": None,
        "annotations": [],
    }
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in reply.tool_calls
        ]
    return {
        "id": response_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "total_tokens": usage.input_tokens + usage.output_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cached_tokens, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
        "service_tier": "default",
        "system_fingerprint": None,
    }


def error_body(status: int, message: str) -> dict[str, Any]:
    """An error body in OpenAI's shape: `{"error": {"message", "type", "param", "code"}}`."""
    kind, code = _ERROR_KINDS.get(status, ("server_error" if status >= 500 else "invalid_request_error", None))
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def models_body(models: Sequence[str]) -> dict[str, Any]:
    """The `GET /v1/models` list."""
    return {
        "object": "list",
        "data": [{"id": m, "object": "model", "created": 0, "owned_by": "niceeval"} for m in models],
    }


def _message(raw: object, where: str) -> Message:
    if not isinstance(raw, dict):
        raise RequestShapeError(f"{where} must be an object")
    role = raw.get("role")
    calls = [_tool_call(c, f"{where}.tool_calls[{j}]") for j, c in enumerate(list_field(raw, "tool_calls"))]
    return Message.model_validate(
        {
            # The deprecated `function` role is a tool result by another name.
            "role": "tool" if role == "function" else role,
            "content": text_of(raw.get("content")),
            "tool_calls": calls,
            "tool_call_id": raw.get("tool_call_id"),
        }
    )


def _tool_call(raw: object, where: str) -> ToolCall:
    function = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not isinstance(function, dict):
        raise RequestShapeError(f"{where} must be an object with a `function`")
    arguments = json_arguments(function.get("arguments"), f"{where}.function.arguments")
    return ToolCall.model_validate({"id": raw.get("id"), "name": function.get("name"), "arguments": arguments})


def json_arguments(raw: object, where: str) -> dict[str, Any]:
    """A tool call's arguments, sent as a JSON string encoding an object. Raises `RequestShapeError` if not."""
    try:
        arguments = json.loads(raw or "{}") if isinstance(raw, str | None) else None
    except json.JSONDecodeError as exc:
        raise RequestShapeError(f"{where} is not a JSON string: {exc}") from exc
    if not isinstance(arguments, dict):
        raise RequestShapeError(f"{where} must be a JSON string encoding an object")
    return arguments


def _tool(raw: object, where: str) -> Tool:
    # A tool's definition sits under the key named by its type: {"type": "function", "function": {...}}.
    spec = raw.get(raw.get("type", "function")) if isinstance(raw, dict) else None
    if not isinstance(spec, dict):
        raise RequestShapeError(f"{where} must be an object like {{'type': 'function', 'function': {{...}}}}")
    return tool_of(spec.get("name"), spec.get("description"), spec.get("parameters"))


def _response_format(raw: object) -> dict[str, Any] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise RequestShapeError("`response_format` must be an object")
    return None if raw.get("type") == "text" else raw


def list_field(holder: dict[str, Any], key: str) -> list[Any]:
    """`holder[key]` as a list (`[]` when absent). Raises `RequestShapeError` when it is not an array."""
    value = holder.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise RequestShapeError(f"`{key}` must be an array")
    return value
