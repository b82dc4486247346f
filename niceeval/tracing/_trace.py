"""A finished trace as an online eval sees it: its spans, linked, and what it was asked and answered."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from niceeval._core.spans import Span, SpanRecord, link
from niceeval.tracing._exchange import trace_input, trace_reply


@dataclass(frozen=True, kw_only=True, slots=True)
class Trace:
    """One finished production trace (`t.trace` in an online eval, the argument of `where=`).

    Build one with `Trace.of(spans)`.
    """

    trace_id: str
    """32 lowercase hex digits."""
    spans: tuple[Span, ...]
    """Every span, linked (`parent`, `children`), in start order."""
    input: str
    """The user's message (`t.input`): the top span's input, "" when no span records one."""
    reply: str
    """The agent's final answer (`t.reply`), "" when no span records one."""
    timed_out: bool = False
    """The trace never closed (its root span never arrived, or spans kept coming) and was scored after the
    watcher's timeout: it may be missing spans."""

    @classmethod
    def of(cls, spans: Iterable[Span], *, timed_out: bool = False) -> Trace:
        """The trace of `spans` (all of one trace id), linked, with its input and reply read from them.

        Raises:
            ValueError: `spans` is empty.
        """
        linked = link(spans)
        if not linked:
            raise ValueError("a trace needs at least one span")
        return cls(
            trace_id=linked[0].trace_id,
            spans=tuple(linked),
            input=trace_input(linked),
            reply=trace_reply(linked),
            timed_out=timed_out,
        )

    @property
    def root(self) -> Span:
        """The span with no parent that started first (the request's span)."""
        return next((span for span in self.spans if span.parent is None), self.spans[0])

    @property
    def service(self) -> str:
        """The `service.name` of the process that made the root span."""
        return self.root.service

    @property
    def failed(self) -> bool:
        """Some span of the trace ended with status ERROR."""
        return any(span.failed for span in self.spans)

    @property
    def duration(self) -> float:
        """Seconds from the first span's start to the last one's end (on the sender's clock)."""
        start = min(span.start_ns for span in self.spans)
        return max(0, max(span.end_ns for span in self.spans) - start) / 1e9

    def to_json(self) -> dict[str, Any]:
        """The trace as JSON data (what `niceeval cases from-trace` writes; `Trace.load` reads it back)."""
        return {
            "trace_id": self.trace_id,
            "timed_out": self.timed_out,
            "spans": [SpanRecord.of(span).model_dump(mode="json") for span in self.spans],
        }

    @classmethod
    def load(cls, path: Path) -> Trace:
        """The trace saved at `path` (`to_json`).

        Raises:
            ValueError: The file is missing, not JSON, or not a saved trace (the message names it).
        """
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            records = [SpanRecord.model_validate(item) for item in data["spans"]]
            return cls.of((record.span() for record in records), timed_out=bool(data.get("timed_out", False)))
        except (OSError, ValueError, KeyError, TypeError, ValidationError) as exc:
            raise ValueError(
                f"{path}: not a saved trace ({type(exc).__name__}: {exc}); `niceeval cases from-trace` writes them"
            ) from None
