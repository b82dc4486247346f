"""Spans become niceeval events, by their semantic attributes (never by display names, which libraries rename).

Two vocabularies are read:

- OpenTelemetry's GenAI semantic conventions: `gen_ai.operation.name` (`chat`, `text_completion`,
  `generate_content`: a model call; `execute_tool`; `invoke_agent`), `gen_ai.tool.name` / `.call.id` /
  `.call.arguments` / `.call.result`, `gen_ai.usage.input_tokens` / `output_tokens` /
  `cache_read.input_tokens`, `gen_ai.request.model` / `gen_ai.response.model`, `gen_ai.provider.name`.
- OpenInference span kinds (`openinference.span.kind`: LLM, TOOL, AGENT, CHAIN): `llm.token_count.*`,
  `llm.model_name`, `tool.name`, `input.value` / `output.value`.

Rules, so nothing counts twice: a model call inside another model call (a framework span around the SDK's span)
is the same call; a tool call id seen twice is one call; the first top agent span of a turn is the agent under
test, every other agent span a subagent; an error is reported once, at the innermost failed span (a failed tool
is a failed `action.called`, not an `error`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from niceeval._core.events import ActionCalledEvent, ErrorEvent, Event, SubagentCalledEvent, UsageEvent
from niceeval._core.spans import Span

Role = Literal["model", "tool", "agent", "chain", "other"]
_MODEL_OPERATIONS = {"chat", "text_completion", "generate_content", "completion"}
_OPENINFERENCE: dict[str, Role] = {"LLM": "model", "TOOL": "tool", "AGENT": "agent", "CHAIN": "chain"}
_PROVIDERS = {"openai": "openai", "azure.ai.openai": "openai", "anthropic": "anthropic"}
_REQUESTED_CALL = re.compile(r"^llm\.output_messages\.\d+\.message\.tool_calls\.\d+\.tool_call\.")


def role(span: Span) -> Role:
    """What the span is, by its semantic attributes: a model call, a tool run, an agent, a chain, or other."""
    attributes = span.attributes
    operation = attributes.get("gen_ai.operation.name")
    if operation in _MODEL_OPERATIONS:
        return "model"
    if operation == "execute_tool":
        return "tool"
    if operation in ("invoke_agent", "create_agent"):
        return "agent"
    kind = attributes.get("openinference.span.kind")
    if isinstance(kind, str):
        return _OPENINFERENCE.get(kind.upper(), "other")
    return "other"


def events_from_spans(spans: Sequence[Span]) -> list[Event]:
    """The events one turn's spans stand for, in start order. `spans` must be linked (`link`)."""
    events: list[Event] = []
    seen_calls: set[str] = set()
    requested = _requested_calls(spans)
    agent_seen = False
    for span in sorted(spans, key=lambda s: (s.start_ns, s.end_ns)):
        kind = role(span)
        if kind == "model" and not any(role(a) == "model" for a in span.ancestors()):
            usage = _usage(span)
            if usage is not None:
                events.append(usage)
        elif kind == "tool":
            call_id = _call_id(span)
            if call_id not in seen_calls:
                seen_calls.add(call_id)
                events.append(_action(span, call_id, requested.get(call_id)))
        elif kind == "agent":
            if agent_seen or any(role(a) == "agent" for a in span.ancestors()):
                events.append(_subagent(span))
            agent_seen = True
        if span.failed and kind != "tool" and not any(d.failed for d in span.descendants()):
            events.append(_error(span))
    return events


def _usage(span: Span) -> UsageEvent | None:
    attributes = span.attributes
    prompt = _int(attributes, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
    output = _int(
        attributes, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion"
    )
    if prompt is None and output is None:
        return None
    cached = _int(attributes, "gen_ai.usage.cache_read.input_tokens", "llm.token_count.prompt_details.cache_read")
    prompt, cached = prompt or 0, min(max(cached or 0, 0), prompt or 0)
    name = _text(span, "gen_ai.response.model", "gen_ai.request.model", "llm.model_name") or "unknown"
    provider = _text(span, "gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system")
    return UsageEvent(
        at=_at(span.start_ns),
        model=model_name(name, provider),
        input_tokens=max(prompt - cached, 0),
        output_tokens=max(output or 0, 0),
        cache_read_tokens=cached,
    )


def model_name(name: str, provider: str) -> str:
    """`provider/name` as the price table reads it (`openai/gpt-5-mini`); a name with a prefix keeps it."""
    head = name.split("/", 1)[0] if "/" in name else ""
    if head in ("openai", "anthropic"):
        return name
    prefix = _PROVIDERS.get(provider.lower(), provider.lower())
    return f"{prefix}/{name}" if prefix else name


def _requested_calls(spans: Sequence[Span]) -> dict[str, Any]:
    """The tool calls the model asked for (OpenInference output messages), by call id: their arguments.

    Some instrumentors record a tool's input lossily (LangChain's gives a one-argument tool just the value);
    the model's request has the arguments as the model wrote them, which is what native adapters record.
    """
    found: dict[str, Any] = {}
    for span in spans:
        if role(span) != "model":
            continue
        calls: dict[str, dict[str, Any]] = {}
        for key, value in span.attributes.items():
            if _REQUESTED_CALL.match(key):
                prefix, _, field = key.rpartition(".tool_call.")
                calls.setdefault(prefix, {})[field] = value
        for call in calls.values():
            if isinstance(call.get("id"), str) and "function.arguments" in call:
                found[call["id"]] = _data(call["function.arguments"])
    return found


def _call_id(span: Span) -> str:
    named = _text(span, "gen_ai.tool.call.id", "tool_call.id")
    if named:
        return named
    message = _tool_message(_data(_first(span.attributes, "output.value")))
    if message is not None and isinstance(message.get("tool_call_id"), str):
        return str(message["tool_call_id"])
    return _text(span, "tool.id") or span.span_id


def _tool_message(value: Any) -> dict[str, Any] | None:
    """The fields of a LangChain `ToolMessage` as OpenInference records a tool's output, or None."""
    data = value.get("data") if isinstance(value, dict) and value.get("type") == "tool" else None
    return data if isinstance(data, dict) else None


def _action(span: Span, call_id: str, requested: Any) -> ActionCalledEvent:
    arguments = _data(_first(span.attributes, "gen_ai.tool.call.arguments", "tool_arguments", "input.value"))
    if requested is not None and not isinstance(arguments, dict):
        arguments = requested
    result = _data(_first(span.attributes, "gen_ai.tool.call.result", "tool_response", "output.value"))
    message = _tool_message(result)
    failed = span.failed or (message is not None and message.get("status") == "error")
    if message is not None:
        result = _data(message.get("content"))
    return ActionCalledEvent(
        at=_at(span.start_ns),
        id=call_id,
        name=_text(span, "gen_ai.tool.name", "tool.name") or span.name,
        input=arguments,
        status="failed" if failed else "success",
        output=result,
        error=(_error_text(span) if span.failed else str(result)) if failed else None,
        duration=span.duration,
    )


def _subagent(span: Span) -> SubagentCalledEvent:
    return SubagentCalledEvent(
        at=_at(span.start_ns),
        name=_text(span, "gen_ai.agent.name", "agent.name", "graph.node.id") or span.name,
        status="failed" if span.failed else "success",
        input=_data(_first(span.attributes, "input.value")),
        output=_data(_first(span.attributes, "output.value")),
    )


def _error(span: Span) -> ErrorEvent:
    exception = next((e for e in span.events if e.name == "exception"), None)
    error_type = exception.attributes.get("exception.type") if exception is not None else None
    error_type = error_type or span.attributes.get("error.type")
    return ErrorEvent(
        at=_at(span.end_ns or span.start_ns),
        message=f"{span.name}: {_error_text(span)}",
        error_type=str(error_type) if error_type else None,
    )


def _error_text(span: Span) -> str:
    if span.status_message:
        return span.status_message
    for event in span.events:
        if event.name == "exception":
            message = event.attributes.get("exception.message")
            kind = event.attributes.get("exception.type")
            if message or kind:
                return f"{kind}: {message}" if kind else str(message)
    return str(span.attributes.get("error.type") or "the span ended with status ERROR")


def _first(attributes: Mapping[str, Any], *keys: str) -> Any:
    return next((attributes[key] for key in keys if attributes.get(key) is not None), None)


def _text(span: Span, *keys: str) -> str:
    value = _first(span.attributes, *keys)
    return "" if value is None else str(value)


def _int(attributes: Mapping[str, Any], *keys: str) -> int | None:
    value = _first(attributes, *keys)
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _data(value: Any) -> Any:
    """Attribute text that is JSON (tool arguments and results usually are) as data; other values as they are."""
    if isinstance(value, str) and value.lstrip().startswith(("{", "[")):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def _at(ns: int) -> datetime:
    """A span time as a UTC datetime: the sender's clock, which may differ from ours (shown, never compared)."""
    if ns <= 0:
        return datetime.now(UTC)
    return datetime.fromtimestamp(ns / 1e9, UTC)
