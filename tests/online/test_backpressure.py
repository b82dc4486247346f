"""Bounds: open traces, held spans and pending evals are bounded; past them traces are dropped and counted, and
the receiver keeps answering 200 while the evals lag."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import httpx
import pytest

from niceeval._core.spans import Span
from niceeval._run.execute import ExecOptions
from niceeval.online._assembler import AssemblyLimits, TraceAssembler
from niceeval.online._watch import Watcher, WatchOptions
from tests.online.online_helpers import chat_trace, online_evals
from tests.online.test_watch import post, watching


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def span(trace: str, span_id: str, parent: str | None = None) -> Span:
    return Span(trace_id=trace, span_id=span_id, parent_id=parent, name="op", start_ns=1, end_ns=2)


def test_a_trace_closes_a_grace_period_after_its_root_span() -> None:
    clock = Clock()
    assembler = TraceAssembler(AssemblyLimits(grace=2.0, timeout=60.0), clock=clock)
    assembler.add([span("t1", "child", "root")])
    assembler.add([span("t1", "root")])
    clock.now += 1.9
    assert assembler.due() == []
    assembler.add([span("t1", "late-child", "root")])  # a batch exporter's straggler still joins
    clock.now += 0.2
    (trace,) = assembler.due()
    assert (trace.trace_id, len(trace.spans), trace.timed_out) == ("t1", 3, False)
    assert assembler.add([span("t1", "later")]) == 1  # after closing: late, refused, counted
    assert (assembler.counts.late_spans, assembler.open_traces, assembler.held_spans) == (1, 0, 0)


def test_a_trace_whose_root_never_comes_closes_at_the_timeout_marked_timed_out() -> None:
    clock = Clock()
    assembler = TraceAssembler(AssemblyLimits(grace=2.0, timeout=30.0), clock=clock)
    assembler.add([span("t1", "child", "remote-parent")])
    clock.now += 29.9
    assert assembler.due() == []
    clock.now += 0.2
    (trace,) = assembler.due()
    assert trace.timed_out and assembler.counts.timed_out == 1


def test_past_the_open_traces_bound_new_traces_are_dropped_and_counted() -> None:
    assembler = TraceAssembler(AssemblyLimits(max_traces=2), clock=Clock())
    refused = [assembler.add([span(f"t{i}", "s"), span(f"t{i}", "c", "s")]) for i in range(4)]
    assert refused == [0, 0, 2, 2]
    assert (assembler.open_traces, assembler.counts.dropped_traces) == (2, 2)
    assert assembler.add([span("t3", "again")]) == 1  # a dropped trace's later spans are refused too


def test_past_the_held_spans_bound_the_growing_trace_is_dropped() -> None:
    assembler = TraceAssembler(AssemblyLimits(max_spans=3), clock=Clock())
    assert assembler.add([span("t1", f"s{i}", "root") for i in range(5)]) == 2
    assert (assembler.held_spans, assembler.counts.dropped_traces, assembler.counts.dropped_spans) == (0, 1, 4)


SLOW = """
from pathlib import Path

import anyio
from niceeval import define_eval

@define_eval(online=True)
async def slow(t):
    while not Path(__file__).with_name("open").exists():  # lags until the test opens the gate
        await anyio.sleep(0.01)
"""


@pytest.mark.anyio
async def test_while_evals_lag_the_receiver_answers_200_and_traces_past_the_queue_are_sampled_away(
    tmp_path: Path,
) -> None:
    options = WatchOptions(port=0, limits=AssemblyLimits(grace=0.01), concurrency=1, max_pending=2, tick=0.01)
    watcher = Watcher(online_evals(tmp_path, SLOW), ExecOptions(timeout=10, root=tmp_path), options)
    async with watching(watcher):
        started = time.monotonic()
        codes = []
        for i in range(12):
            codes.append((await post(watcher, chat_trace(f"q{i}", "a")[1])).status_code)
            await anyio.sleep(0.03)
        posting = time.monotonic() - started
        with anyio.fail_after(10):  # the last trace closes (grace 0.01 s) and meets the full queue
            while watcher.counts.queued + watcher.counts.dropped < 12:
                await anyio.sleep(0.01)
        async with httpx.AsyncClient() as client:
            status = (await client.get(f"{watcher.url}/status")).json()
        (tmp_path / "open").touch()
    assert codes == [200] * 12
    assert posting < 8.0  # 12 requests did not wait for the evals, which wait for the gate
    evals = status["evals"]
    assert evals["pending"] <= 2 and evals["running"] <= 1  # the gate is shut: nothing was scored yet
    assert evals["scored"] == 0 and evals["dropped"] >= 9  # the rest sampled away, counted
    assert status["traces"]["closed"] == 12
    assert watcher.counts.scored + watcher.counts.dropped == 12
