"""Streamed answers (`stream: true`): a resolved reply as the server-sent events each API sends.

Each function returns the whole stream as a list of SSE frames; the app sends them one by one. Text is cut
into word-sized deltas and tool-call arguments arrive in one delta after the call opens, so clients that
assemble deltas are exercised as with the real APIs.
"""

from __future__ import annotations

import json
import re
from typing import Any

from niceeval.testing import _anthropic, _openai, _responses
from niceeval.testing._replies import Reply
from niceeval.testing._request import LLMRequest

_WORD = re.compile(r"\s*\S+\s*|\s+")


def pieces(text: str) -> list[str]:
    """`text` cut into word-sized deltas (each word with the spaces around it); none for an empty text."""
    return _WORD.findall(text)


def _frame(data: dict[str, Any], event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n"


def chat_completions(reply: Reply, request: LLMRequest, response_id: str) -> list[str]:
    """`chat.completion.chunk` frames, then `data: [DONE]`; a usage chunk when `stream_options.include_usage`."""
    body = _openai.render(reply, request, response_id)
    options = request.body.get("stream_options")
    with_usage = isinstance(options, dict) and options.get("include_usage") is True
    base = {k: body[k] for k in ("id", "created", "model", "service_tier", "system_fingerprint")}
    base["object"] = "chat.completion.chunk"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _frame({**base, "choices": [choice], **({"usage": None} if with_usage else {})})

    frames = [chunk({"role": "assistant", "content": "", "refusal": None})]
    frames += [chunk({"content": piece}) for piece in pieces(reply.content or "")]
    for index, call in enumerate(body["choices"][0]["message"].get("tool_calls", [])):
        opening = {"index": index, "id": call["id"], "type": "function", "function": {**call["function"]}}
        opening["function"]["arguments"] = ""
        frames.append(chunk({"tool_calls": [opening]}))
        arguments = {"index": index, "function": {"arguments": call["function"]["arguments"]}}
        frames.append(chunk({"tool_calls": [arguments]}))
    frames.append(chunk({}, body["choices"][0]["finish_reason"]))
    if with_usage:
        frames.append(_frame({**base, "choices": [], "usage": body["usage"]}))
    return [*frames, "data: [DONE]\n\n"]


class _Sequence:
    """Responses API events, numbered by `sequence_number` as they are made."""

    def __init__(self) -> None:
        self.frames: list[str] = []

    def add(self, kind: str, **fields: Any) -> None:
        self.frames.append(_frame({"type": kind, "sequence_number": len(self.frames), **fields}, kind))


def responses(reply: Reply, request: LLMRequest, response_id: str) -> list[str]:
    """`response.created` ... `response.completed`, with the output items opened, filled and closed in order."""
    items = _responses.output_items(reply, response_id)
    events = _Sequence()
    started = _responses.response_body(reply, request, response_id, [], status="in_progress")
    events.add("response.created", response=started)
    events.add("response.in_progress", response=started)
    for index, item in enumerate(items):
        if item["type"] == "message":
            _message_item(events, index, item)
        else:
            _function_call_item(events, index, item)
    events.add("response.completed", response=_responses.render(reply, request, response_id))
    return events.frames


def _message_item(events: _Sequence, index: int, item: dict[str, Any]) -> None:
    part = item["content"][0]
    where = {"item_id": item["id"], "output_index": index, "content_index": 0}
    events.add("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "content": []})
    events.add("response.content_part.added", **where, part={**part, "text": ""})
    for piece in pieces(part["text"]):
        events.add("response.output_text.delta", **where, delta=piece, logprobs=[])
    events.add("response.output_text.done", **where, text=part["text"], logprobs=[])
    events.add("response.content_part.done", **where, part=part)
    events.add("response.output_item.done", output_index=index, item=item)


def _function_call_item(events: _Sequence, index: int, item: dict[str, Any]) -> None:
    where = {"item_id": item["id"], "output_index": index}
    opening = {**item, "status": "in_progress", "arguments": ""}
    events.add("response.output_item.added", output_index=index, item=opening)
    events.add("response.function_call_arguments.delta", **where, delta=item["arguments"])
    events.add("response.function_call_arguments.done", **where, name=item["name"], arguments=item["arguments"])
    events.add("response.output_item.done", output_index=index, item=item)


def messages(reply: Reply, request: LLMRequest, response_id: str) -> list[str]:
    """`message_start`, each content block's start / deltas / stop, `message_delta` (stop reason, usage)."""
    body = _anthropic.render(reply, request, response_id)
    usage = body["usage"]
    frames = [
        _frame(
            {
                "type": "message_start",
                "message": {**body, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 0}},
            },
            "message_start",
        )
    ]
    for index, block in enumerate(body["content"]):
        frames += _content_block(index, block)
    frames.append(
        _frame(
            {
                "type": "message_delta",
                "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
                "usage": usage,
            },
            "message_delta",
        )
    )
    frames.append(_frame({"type": "message_stop"}, "message_stop"))
    return frames


def _content_block(index: int, block: dict[str, Any]) -> list[str]:
    if block["type"] == "text":
        opening = {**block, "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in pieces(block["text"])]
    else:
        opening = {**block, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
    frames = [_frame({"type": "content_block_start", "index": index, "content_block": opening}, "content_block_start")]
    frames += [
        _frame({"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta")
        for delta in deltas
    ]
    frames.append(_frame({"type": "content_block_stop", "index": index}, "content_block_stop"))
    return frames
