"""The collector: runs wait a bounded window for late spans, and the public names stay few."""

from __future__ import annotations

import time

import anyio
import pytest

import niceeval.tracing
from niceeval.tracing._collector import TraceCollector, TraceLimits
from tests.tracing.trace_helpers import span


def test_public_names() -> None:
    assert sorted(niceeval.tracing.__all__) == [
        "Role",
        "Span",
        "SpanEvent",
        "SpanKind",
        "SpanStatus",
        "Trace",
        "events_from_spans",
        "role",
    ]
    for name in niceeval.tracing.__all__:
        assert hasattr(niceeval.tracing, name), name


def on(run_trace_id: str, *spans: object) -> list[object]:
    for s in spans:
        s.trace_id = run_trace_id  # type: ignore[attr-defined]
    return list(spans)


@pytest.mark.anyio
async def test_settle_returns_once_the_top_span_and_every_parent_arrived() -> None:
    collector = TraceCollector()
    run = collector.open_run()
    child = span("c", "top")
    collector.add(on(run.trace_id, child))  # type: ignore[arg-type]
    assert not run.complete()  # its parent is still out

    async def late_parent() -> None:
        await anyio.sleep(0.05)
        collector.add(on(run.trace_id, span("top", run.root_span_id)))  # type: ignore[arg-type]

    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(late_parent)
        assert await collector.settle(run, window=5.0)
    assert 0.04 < time.monotonic() - started < 2.0
    (top,) = [s for s in collector.close_run(run) if s.parent is None]
    assert top.span_id == "top" and [c.span_id for c in top.children] == ["c"]


@pytest.mark.anyio
async def test_settle_gives_up_after_the_window_when_no_span_comes() -> None:
    collector = TraceCollector(TraceLimits(poll=0.01))
    run = collector.open_run()
    started = time.monotonic()
    assert not await collector.settle(run, window=0.1)
    assert 0.09 < time.monotonic() - started < 1.0


def test_traceparent_is_w3c() -> None:
    run = TraceCollector().open_run()
    version, trace_id, parent, flags = run.traceparent.split("-")
    assert (version, flags) == ("00", "01") and len(trace_id) == 32 and len(parent) == 16
    assert trace_id == run.trace_id and parent == run.root_span_id
