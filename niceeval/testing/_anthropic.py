"""The Anthropic Messages dialect: request parsing, `message` bodies and error bodies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from niceeval.testing._replies import Reply, ToolCall, resolved_usage
from niceeval.testing._request import LLMRequest, Message, RequestShapeError, Tool, shape_checked, text_of, tool_of

CALL_PREFIX = "toolu_"
RESPONSE_PREFIX = "msg_"

# The `error.type` the real API sends per status; the SDK picks its exception class from the status.
_ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def parse_request(body: dict[str, Any], headers: dict[str, str]) -> LLMRequest:
    """The neutral view of a `POST /v1/messages` body.

    Raises:
        RequestShapeError: The body is not a Messages request.
    """
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise RequestShapeError("model: Field required")
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise RequestShapeError("messages: Field required (a non-empty array)")
    system = body.get("system")
    messages = [Message(role="system", content=text_of(system))] if system else []
    with shape_checked():
        for i, raw in enumerate(raw_messages):
            messages += _messages(raw, f"messages.{i}")
        return LLMRequest(
            provider="anthropic",
            api="messages",
            model=model,
            messages=messages,
            tools=[_tool(raw, f"tools.{i}") for i, raw in enumerate(_list(body, "tools"))],
            response_format=_response_format(body),
            body=body,
            headers=headers,
        )


def render(reply: Reply, request: LLMRequest, response_id: str) -> dict[str, Any]:
    """The `message` body for a resolved reply (tool call ids and usage filled in)."""
    usage = resolved_usage(reply)
    content: list[dict[str, Any]] = []
    if reply.content or not reply.tool_calls:
        content.append({"type": "text", "text": reply.content or ""})
    content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in reply.tool_calls]
    return {
        "id": response_id,
        "type": "message",
        "role": "assistant",
        "model": request.model,
        "content": content,
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            # Anthropic counts cache reads apart from `input_tokens`; TokenUsage counts them inside.
            "input_tokens": usage.input_tokens - usage.cached_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_input_tokens": usage.cached_tokens,
            "cache_creation_input_tokens": 0,
        },
    }


def error_body(status: int, message: str, request_id: str) -> dict[str, Any]:
    """An error body in Anthropic's shape: `{"type": "error", "error": {"type", "message"}, "request_id"}`."""
    kind = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}


def models_body(models: Sequence[str]) -> dict[str, Any]:
    """The `GET /v1/models` page."""
    data = [
        {
            "type": "model",
            "id": m,
            "display_name": m,
            "created_at": "1970-01-01T00:00:00Z",
            "lifecycle": "active",
        }
        for m in models
    ]
    return {
        "data": data,
        "has_more": False,
        "first_id": models[0] if models else None,
        "last_id": models[-1] if models else None,
    }


def _messages(raw: object, where: str) -> list[Message]:
    """One API message as neutral messages: its tool results (one `tool` message each), then the rest."""
    if not isinstance(raw, dict):
        raise RequestShapeError(f"{where}: must be an object")
    role, content = raw.get("role"), raw.get("content")
    if isinstance(content, str):
        return [Message.model_validate({"role": role, "content": content})]
    if not isinstance(content, list):
        raise RequestShapeError(f"{where}.content: must be a string or an array of content blocks")
    blocks = [b for b in content if isinstance(b, dict)]
    results = [
        Message(role="tool", content=text_of(b.get("content")), tool_call_id=b.get("tool_use_id"))
        for b in blocks
        if b.get("type") == "tool_result"
    ]
    calls = [
        ToolCall.model_validate({"id": b.get("id"), "name": b.get("name"), "arguments": b.get("input") or {}})
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    text = text_of([b for b in blocks if b.get("type") == "text"])
    if text or calls or not results:
        return [*results, Message.model_validate({"role": role, "content": text, "tool_calls": calls})]
    return results


def _tool(raw: object, where: str) -> Tool:
    if not isinstance(raw, dict):
        raise RequestShapeError(f"{where}: must be an object")
    # Server tools (web search, code execution, ...) have a `type` and a name but no input schema.
    return tool_of(raw.get("name"), raw.get("description"), raw.get("input_schema"))


def _response_format(body: dict[str, Any]) -> dict[str, Any] | None:
    # `output_config.format` is the GA parameter; the beta endpoint still sends a top-level `output_format`.
    config = body.get("output_config")
    fmt = config.get("format") if isinstance(config, dict) else None
    fmt = fmt or body.get("output_format")
    if fmt is not None and not isinstance(fmt, dict):
        raise RequestShapeError("output_config.format: must be an object")
    return fmt


def _list(holder: dict[str, Any], key: str) -> list[Any]:
    value = holder.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise RequestShapeError(f"{key}: must be an array")
    return value
