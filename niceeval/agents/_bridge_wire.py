"""What the recording bridge reads in OpenAI traffic: tool results in requests, tool calls and usage in answers.

Both wire formats are covered, Chat Completions (`/chat/completions`) and the Responses API (`/responses`),
streamed (server-sent events) and not. Bodies are untrusted data: they are parsed as JSON only, every field's
type is checked before use, and anything unexpected is skipped; nothing here ever fails the agent's request.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

Api = Literal["chat", "responses"]
ENDPOINTS: dict[str, Api] = {"chat/completions": "chat", "responses": "responses"}
"""Paths under `/v1` whose traffic is recorded; every other path is passed through unread."""

PLACEHOLDER_KEY = "niceeval-bridge"
"""The API key sessions hand to agents (`session.api_key`): the bridge sends the real key in its place."""
MAX_PARSED_BYTES = 64 * 1024 * 1024
"""Bodies (and single stream events) larger than this are passed on but not read."""
_SEPARATOR = re.compile(rb"\r\n\r\n|\n\n|\r\r")
_LINE = re.compile(r"\r\n|\r|\n")
_OUTPUT_ITEMS = {"function_call_output", "custom_tool_call_output"}
_TERMINAL = {"response.completed", "response.incomplete", "response.failed", "error"}


@dataclass(frozen=True, slots=True)
class RequestedCall:
    """A tool call the model asked for: `arguments` as the model wrote them (JSON text, or free text)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool's result the agent sent back to the model, as sent (text, or a list of content parts)."""

    call_id: str
    output: object


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one model call, as OpenAI reports them (`prompt_tokens` includes the cached ones)."""

    prompt_tokens: int
    output_tokens: int
    cached_tokens: int


@dataclass(slots=True)
class Answer:
    """What one model answer held that the bridge records."""

    model: str = ""
    usage: Usage | None = None
    calls: list[RequestedCall] = field(default_factory=list)


def parse_json(body: bytes) -> Any:
    """`body` as JSON data, or None when it is too large or not JSON."""
    if len(body) > MAX_PARSED_BYTES:
        return None
    try:
        return json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def request_model(body: object) -> str:
    """The model a request asked for ("" when it names none)."""
    model = body.get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) else ""


def tool_results(api: Api, body: object) -> list[ToolResult]:
    """The tool results in a request: `role: tool` messages (Chat Completions) or `*_call_output` input items."""
    if not isinstance(body, dict):
        return []
    if api == "chat":
        return [
            ToolResult(call_id=item["tool_call_id"], output=item.get("content"))
            for item in _dicts(body.get("messages"))
            if item.get("role") == "tool" and isinstance(item.get("tool_call_id"), str)
        ]
    return [
        ToolResult(call_id=item["call_id"], output=item.get("output"))
        for item in _dicts(body.get("input"))
        if item.get("type") in _OUTPUT_ITEMS and isinstance(item.get("call_id"), str)
    ]


def answer_of(api: Api, body: object) -> Answer:
    """The model, usage and tool calls of a complete (not streamed) answer."""
    if not isinstance(body, dict):
        return Answer()
    model = body.get("model")
    answer = Answer(model=model if isinstance(model, str) else "", usage=_usage(api, body.get("usage")))
    if api == "chat":
        for choice in _dicts(body.get("choices")):
            message = choice.get("message")
            if isinstance(message, dict):
                answer.calls += [c for c in map(_chat_call, _dicts(message.get("tool_calls"))) if c is not None]
    else:
        answer.calls = [c for c in map(_responses_call, _dicts(body.get("output"))) if c is not None]
    return answer


def _dicts(value: object) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _usage(api: Api, usage: object) -> Usage | None:
    if not isinstance(usage, dict):
        return None
    prompt, output, details = (
        ("prompt_tokens", "completion_tokens", "prompt_tokens_details")
        if api == "chat"
        else ("input_tokens", "output_tokens", "input_tokens_details")
    )
    cached = usage.get(details)
    return Usage(
        prompt_tokens=_count(usage.get(prompt)),
        output_tokens=_count(usage.get(output)),
        cached_tokens=_count(cached.get("cached_tokens")) if isinstance(cached, dict) else 0,
    )


def _chat_call(call: dict[str, Any]) -> RequestedCall | None:
    call_id = call.get("id")
    if not isinstance(call_id, str):
        return None
    function, custom = call.get("function"), call.get("custom")
    if isinstance(function, dict):
        return RequestedCall(call_id, _text(function.get("name")), _text(function.get("arguments")))
    if isinstance(custom, dict):
        return RequestedCall(call_id, _text(custom.get("name")), _text(custom.get("input")))
    return None


def _responses_call(item: dict[str, Any]) -> RequestedCall | None:
    call_id = item.get("call_id")
    if not isinstance(call_id, str):
        return None
    if item.get("type") == "function_call":
        return RequestedCall(call_id, _text(item.get("name")), _text(item.get("arguments")))
    if item.get("type") == "custom_tool_call":
        return RequestedCall(call_id, _text(item.get("name")), _text(item.get("input")))
    return None


def split_events(buffer: bytearray, *, final: bool = False) -> list[bytes]:
    """Complete server-sent events cut from the front of `buffer`, each with its blank line (the rest stays).

    An event that grows past `MAX_PARSED_BYTES` without ending is cut as it is, so the buffer stays bounded;
    with `final`, whatever is left is returned too.
    """
    events: list[bytes] = []
    while True:
        end = _SEPARATOR.search(buffer)
        if end is None:
            break
        events.append(bytes(buffer[: end.end()]))
        del buffer[: end.end()]
    if buffer and (final or len(buffer) > MAX_PARSED_BYTES):
        events.append(bytes(buffer))
        buffer.clear()
    return events


def event_data(raw: bytes) -> str | None:
    """The `data` of one server-sent event (its `data:` lines joined), or None when it has none."""
    if len(raw) > MAX_PARSED_BYTES:
        return None
    lines = [line for line in _LINE.split(raw.decode("utf-8", "replace")) if line.startswith("data:")]
    if not lines:
        return None
    return "\n".join(line[5:].removeprefix(" ") for line in lines)


class StreamReader:
    """Reads a streamed answer event by event, gathering what `answer_of` gathers from a whole body.

    Args:
        api: The wire format.
        hide_usage: Chat Completions only: the bridge asked for the usage chunk the agent did not ask for, so
            `feed` says to drop it (the agent sees the stream it asked for).
    """

    def __init__(self, api: Api, *, hide_usage: bool = False) -> None:
        self.api = api
        self.answer = Answer()
        self.finished = False
        """The stream's last event was seen (`[DONE]`, or the Responses API's final `response.*` event)."""
        self._hide_usage = hide_usage
        self._chat_calls: dict[tuple[int, int], dict[str, Any]] = {}
        self._items: list[RequestedCall] = []

    def feed(self, raw: bytes) -> bool:
        """Read one event; returns whether to pass it on to the agent."""
        data = event_data(raw)
        if data is None:
            return True
        if data.strip() == "[DONE]":
            self.finished = True
            return True
        try:
            event = json.loads(data)
        except (ValueError, RecursionError):
            return True
        if not isinstance(event, dict):
            return True
        if self.api == "chat":
            return self._chat_chunk(event)
        self._responses_event(event)
        return True

    def result(self) -> Answer:
        """What the stream said so far (its tool calls assembled from their pieces)."""
        if self.api == "chat":
            self.answer.calls = [
                RequestedCall(call["id"], call["name"], call["arguments"])
                for _, call in sorted(self._chat_calls.items())
                if call["id"]
            ]
        elif not self.answer.calls:
            self.answer.calls = list(self._items)
        return self.answer

    def _chat_chunk(self, chunk: dict[str, Any]) -> bool:
        if isinstance(chunk.get("model"), str):
            self.answer.model = chunk["model"]
        usage = _usage("chat", chunk.get("usage"))
        if usage is not None:
            self.answer.usage = usage
        choices = _dicts(chunk.get("choices"))
        for choice in choices:
            delta = choice.get("delta")
            if isinstance(delta, dict):
                for piece in _dicts(delta.get("tool_calls")):
                    self._chat_piece(_count(choice.get("index")), piece)
        return not (self._hide_usage and usage is not None and not choices)

    def _chat_piece(self, choice: int, piece: dict[str, Any]) -> None:
        key = (choice, _count(piece.get("index")))
        call = self._chat_calls.setdefault(key, {"id": "", "name": "", "arguments": ""})
        if isinstance(piece.get("id"), str):
            call["id"] = piece["id"]
        function = piece.get("function") if isinstance(piece.get("function"), dict) else piece.get("custom")
        if isinstance(function, dict):
            call["name"] = call["name"] or _text(function.get("name"))
            if len(call["arguments"]) <= MAX_PARSED_BYTES:
                call["arguments"] += _text(function.get("arguments")) + _text(function.get("input"))

    def _responses_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "response.output_item.done" and isinstance(event.get("item"), dict):
            call = _responses_call(event["item"])
            if call is not None:
                self._items.append(call)
        elif kind in _TERMINAL:
            self.finished = True
            if isinstance(event.get("response"), dict):
                self.answer = answer_of("responses", event["response"])
