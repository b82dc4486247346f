"""Setups with known outcomes, costs and turn latencies, recorded as suite runs through the store's own Recorder."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from niceeval._core.assertion import AssertionResult
from niceeval._core.events import MessageEvent
from niceeval._core.outcome import Outcome
from niceeval._core.results import RunResult, Spend
from niceeval._core.summary import PlannedEval
from niceeval.store import Store, SuiteRunStart
from niceeval.store._models import SuiteStatus
from niceeval.store._recorder import Recorder, SuiteEnd


@dataclass(frozen=True, kw_only=True)
class Case:
    """One eval run: its outcome, the agent's cost, its turns' latencies, and a graded score when given."""

    outcome: Outcome = "passed"
    cost: float | None = 0.001
    turns: tuple[float, ...] = (1.0,)
    score: float | None = None


def result(eval_id: str, case: Case, run_index: int = 0) -> RunResult:
    events = [MessageEvent(role="assistant", text="hi", latency=s, seq=n) for n, s in enumerate(case.turns)]
    spend = Spend(calls=1, tokens=10, cost=case.cost, unpriced=[] if case.cost is not None else ["openai/mystery"])
    assertions = []
    if case.score is not None:
        assertions.append(
            AssertionResult(name="similarity('Paris')", severity="soft", score=case.score, threshold=0.5,
                            state="passed" if case.score >= 0.5 else "failed", location="evals/a.py:3")
        )  # fmt: skip
    return RunResult(eval_id=eval_id, run_index=run_index, file="evals/a.py", line=1, outcome=case.outcome,
                     duration_s=0.1, events=events, agent_spend=spend, assertions=assertions)  # fmt: skip


def record(
    store: Store, run_id: str, cases: dict[str, Sequence[Case]], *, strict: bool = False,
    experiment: str | None = None, status: SuiteStatus = "finished",
) -> None:  # fmt: skip
    """Suite run `run_id` (of `experiment`, when given): each eval id with its runs, in order."""
    plan = [PlannedEval(id=eval_id, file="evals/a.py", line=1, runs=len(runs)) for eval_id, runs in cases.items()]
    recorder = Recorder.of(store)
    try:
        start = SuiteRunStart(id=run_id, command=["niceeval", "run"], strict=strict, experiment=experiment)
        recorder.begin(start, plan)
        recorder.add(run_id, [result(e, c, i) for e, runs in cases.items() for i, c in enumerate(runs)])
        recorder.finish(run_id, SuiteEnd(status=status, exit_code=0, duration_s=1.0))
    finally:
        recorder.close()


def once(store: Store, run_id: str, cases: Sequence[Case], **how: Any) -> None:
    """Suite run `run_id`: evals `e0`, `e1`, ..., each run once as `cases[i]` (`how`: as `record` takes it)."""
    record(store, run_id, {f"e{i}": [case] for i, case in enumerate(cases)}, **how)
