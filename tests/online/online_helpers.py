"""Production-like traces for the online tests: OTLP/JSON payloads and the evals that score them."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from niceeval._run.discovery import EvalEntry, discover
from tests.tracing.trace_helpers import json_payload, json_span


def chat_trace(question: str, answer: str, *, tool: str | None = "search", failed: bool = False) -> tuple[str, bytes]:
    """A trace id and the OTLP/JSON payload of one agent request: a root agent span, a model call, maybe a tool."""
    trace_id = secrets.token_hex(16)
    root, model, tool_span = secrets.token_hex(8), secrets.token_hex(8), secrets.token_hex(8)
    spans = [
        json_span(
            trace_id,
            root,
            None,
            "agent run",
            start=1_000_000_000,
            end=3_000_000_000,
            attributes={"openinference.span.kind": "AGENT", "input.value": question, "output.value": answer},
        ),
        json_span(
            trace_id,
            model,
            root,
            "chat",
            start=1_100_000_000,
            end=1_900_000_000,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-5-mini",
                "gen_ai.provider.name": "openai",
                "gen_ai.usage.input_tokens": 40,
                "gen_ai.usage.output_tokens": 12,
            },
        ),
    ]
    if tool is not None:
        extra: dict[str, Any] = {"status": {"code": 2, "message": "tool broke"}} if failed else {}
        spans.append(
            json_span(
                trace_id,
                tool_span,
                root,
                "tool",
                start=2_000_000_000,
                end=2_100_000_000,
                attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool},
                **extra,
            )
        )
    return trace_id, json_payload(*spans, service="support-bot")


def online_evals(folder: Path, source: str) -> list[EvalEntry]:
    """The online evals of an eval file with `source`, written in `folder`."""
    path = folder / "evals_online.py"
    path.write_text(source, encoding="utf-8")
    found = discover(folder, [str(path)])
    assert found.errors == []
    return found.online
