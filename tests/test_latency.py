"""Latency: every turn records its duration; max_latency on t and on a turn; p50/p95 per eval and per variant."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from niceeval import EvalContext, RunResult, UsageError, define_eval
from niceeval._core.events import MessageEvent, latencies
from niceeval._core.outcome import Outcome
from niceeval._core.summary import EvalTally, PlannedEval, percentile
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.render import VariantTable
from niceeval.report._variants import variant_lines, variant_records


async def slow_on_request(message: str) -> str:
    await anyio.sleep(0.3 if "slow" in message else 0.0)
    return "ok"


def run(spec: EvalSpec) -> RunResult:
    entry = EvalEntry(id=f"tests/test_latency.py::{spec.name}", spec=spec)
    return anyio.run(execute, entry, 0, ExecOptions(timeout=5, agent=slow_on_request))


def test_each_turn_records_its_duration_on_the_reply() -> None:
    seen: list[float | None] = []

    @define_eval
    async def ev(t: EvalContext) -> None:
        seen.append((await t.send("slow please")).latency)
        seen.append((await t.send("fast")).latency)

    result = run(ev)
    slow, fast = seen
    assert slow is not None and fast is not None
    assert slow >= 0.3 > fast
    assert latencies(result.events) == [slow, fast]  # kept in the run's record (reports, the store)


def test_max_latency_on_a_turn_and_on_the_run() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        fast = await t.send("fast")
        slow = await t.send("slow")
        fast.max_latency(0.2)
        slow.max_latency(0.2)
        t.max_latency(0.2).at_least(0.1)

    result = run(ev)
    states = {a.name: (a.severity, a.state) for a in result.assertions}
    assert states == {
        "turn 1: max_latency(0.2s)": ("gate", "passed"),
        "turn 2: max_latency(0.2s)": ("gate", "failed"),
        "max_latency(0.2s)": ("soft", "passed"),  # score 0.2 / 0.3+ is above 0.1
    }
    missed = next(a for a in result.assertions if a.state == "failed")
    assert missed.reason.startswith("slowest turn 0.3")
    assert missed.score is not None and 0.3 < missed.score < 0.7


def test_max_latency_with_nothing_sent_misses_saying_so() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        t.max_latency(1)

    (result,) = run(ev).assertions
    assert result.state == "failed" and "nothing was sent" in result.reason


def test_max_latency_refuses_a_non_positive_limit() -> None:
    with pytest.raises(UsageError, match="positive number of seconds"):
        from niceeval._eval.efficiency import max_latency

        max_latency(0)


def test_percentiles_interpolate_between_ranks() -> None:
    assert percentile([], 0.5) is None
    assert percentile([3.0], 0.95) == 3.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert percentile([float(i) for i in range(1, 101)], 0.95) == pytest.approx(95.05)


def result_with_turns(seconds: list[float], *, variant: dict[str, str] | None = None) -> RunResult:
    events: list[Any] = [MessageEvent(role="assistant", text="x", latency=s) for s in seconds]
    outcome: Outcome = "passed"
    return RunResult(eval_id="e", file="f.py", line=1, outcome=outcome, duration_s=1.0, events=events, variant=variant)


def test_eval_tally_and_variant_table_report_p50_and_p95() -> None:
    tally = EvalTally(eval=PlannedEval(id="e", file="f.py", line=1, runs=2))
    tally.add(result_with_turns([1.0, 2.0]))
    tally.add(result_with_turns([3.0, 4.0]))
    assert (tally.latency(0.5), tally.latency(0.95)) == (2.5, pytest.approx(3.85))

    table = VariantTable()
    table.add(result_with_turns([1.0, 3.0], variant={"model": "a"}))
    table.add(result_with_turns([], variant={"model": "b"}))
    (row_a, row_b) = variant_records(table, strict=False)
    assert (row_a["latency_p50_s"], row_b["latency_p50_s"]) == (2.0, None)
    lines = variant_lines(table, strict=False)
    assert lines[1].split()[-1] == "turns"
    assert "p50 2.00s p95 2.90s" in lines[2] and lines[3].rstrip().endswith("-")
