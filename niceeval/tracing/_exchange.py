"""What a finished trace was asked and answered, read from its spans' semantic attributes.

An online eval reads `t.input` and `t.reply` from a production trace, which no niceeval session drove. They are
read, like everything in this package, by attributes and never by display names:

- the input: OpenInference `input.value`, GenAI `gen_ai.input.messages` (the last user message), the older
  `gen_ai.prompt`, pydantic-ai's `pydantic_ai.all_messages`;
- the reply: OpenInference `output.value`, pydantic-ai's `final_result`, GenAI `gen_ai.output.messages` (its
  text parts), the older `gen_ai.completion`.

The spans closest to the root speak first (the agent's own input and answer, not a model call's inside it); for
the reply, among spans at one depth the one that ended last (the final model call, not the first).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from niceeval._core.spans import Span

_INPUT_KEYS = ("input.value", "gen_ai.input.messages", "gen_ai.prompt", "pydantic_ai.all_messages")
_OUTPUT_KEYS = ("output.value", "final_result", "gen_ai.output.messages", "gen_ai.completion")


def trace_input(spans: Sequence[Span]) -> str:
    """The user's message the trace answers ("" when no span records one). `spans` must be linked."""
    for span in sorted(spans, key=lambda s: (_depth(s), s.start_ns)):
        for key in _INPUT_KEYS:
            text = _text_of(span.attributes.get(key), "user")
            if text:
                return text
    return ""


def trace_reply(spans: Sequence[Span]) -> str:
    """The agent's final answer in the trace ("" when no span records one). `spans` must be linked."""
    for span in sorted(spans, key=lambda s: (_depth(s), -s.end_ns)):
        for key in _OUTPUT_KEYS:
            text = _text_of(span.attributes.get(key), "assistant")
            if text:
                return text
    return ""


def _depth(span: Span) -> int:
    return sum(1 for _ in span.ancestors())


def _text_of(value: Any, role: str) -> str:
    """Text from an attribute: plain text, or a JSON message list (the last message of `role`), or an object with
    `messages`."""
    if isinstance(value, str):
        stripped = value.lstrip()
        if not stripped.startswith(("[", "{")):
            return value
        try:
            value = json.loads(stripped)
        except (ValueError, RecursionError):
            return stripped
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if isinstance(value, list):
        for message in reversed(value):
            said = message.get("role", message.get("kind", role)) if isinstance(message, dict) else None
            if isinstance(message, dict) and said in (role, _PYDANTIC_ROLES.get(role)):
                text = _message_text(message)
                if text:
                    return text
        return ""
    if isinstance(value, dict):
        return _message_text(value)
    return ""


_PYDANTIC_ROLES = {"user": "request", "assistant": "response"}
"""pydantic-ai's `all_messages` kinds (`kind: request | response`), read as roles."""


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = message.get("parts")
    if not isinstance(parts, list):
        parts = content if isinstance(content, list) else []
    texts = [
        str(part.get("content") or part.get("text") or "")
        for part in parts
        if isinstance(part, dict) and part.get("type", part.get("part_kind")) in ("text", "user-prompt", None)
    ]
    return "\n".join(text for text in texts if text)
