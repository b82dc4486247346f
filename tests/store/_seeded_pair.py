"""A seeded pair of suite runs for the diff's before/after tests: 300 evals (changed, unchanged, gone and new;
one to three runs each; gate, soft and keyed assertions), each run with the agent's cost and two timed turns."""

from __future__ import annotations

import random

from niceeval import AssertionResult, RunResult
from niceeval._core.events import MessageEvent
from niceeval._core.outcome import Outcome
from niceeval._core.results import Spend
from niceeval._core.summary import PlannedEval
from niceeval.store import Store, SuiteRunStart
from niceeval.store._recorder import Recorder, SuiteEnd

EVALS = 300


def seeded_run(rng: random.Random, eval_id: str, index: int, *, good: float) -> RunResult:
    """One run: an `includes` gate, a soft rubric, a keyed judge whose label the head renames; a cost and two
    timed replies."""
    rubric = round(rng.random(), 2)
    outcome: Outcome = rng.choices(["passed", "scored", "failed", "skipped"], [good, 0.2, 0.8 - good, 0.05])[0]
    assertions = [
        AssertionResult(name="includes('x')", severity="gate", score=float(outcome == "passed"), threshold=1.0,
                        state="passed" if outcome == "passed" else "failed", location="evals/a.py:5"),
        AssertionResult(name=f"similarity({eval_id[-1]!r})", severity="soft", score=rubric, threshold=0.5,
                        state="passed" if rubric >= 0.5 else "failed", location="evals/a.py:6"),
        AssertionResult(name="polite?" if good > 0.5 else "is it polite?", key="tone", severity="soft",
                        score=round(rng.random(), 1), threshold=0.5, state="passed", location="evals/a.py:7"),
    ]  # fmt: skip
    turns = [round(0.5 + rng.random() * (2.0 - good), 3) for _ in range(2)]
    events = [MessageEvent(role="assistant", text="ok", latency=seconds, seq=n) for n, seconds in enumerate(turns)]
    spend = Spend(calls=2, tokens=100, cost=round(0.001 + rng.random() * 0.001 * (2.0 - good), 6))
    return RunResult(eval_id=eval_id, file="evals/a.py", line=3, run_index=index, outcome=outcome, duration_s=0.25,
                     assertions=[] if outcome == "skipped" else assertions, events=events,
                     agent_spend=spend)  # fmt: skip


def record_seeded(store: Store, run_id: str, ids: range, seed: int, good: float) -> None:
    """Suite run `run_id` of evals `ids` (those below 120 end alike whatever the seed: the unchanged)."""
    rng = random.Random(seed)
    plan, results = [], []
    for n in ids:
        eval_id, runs = f"evals/a.py::case_{n:03d}", 1 + n % 3
        plan.append(PlannedEval(id=eval_id, file="evals/a.py", line=n + 1, runs=runs, cluster=f"doc{n // 4}"))
        steady = random.Random(n)
        for i in range(runs):
            results.append(seeded_run(steady if n < 120 else rng, eval_id, i, good=0.6 if n < 120 else good))
    recorder = Recorder.of(store)
    try:
        recorder.begin(SuiteRunStart(id=run_id, command=["niceeval", "run"]), plan)
        recorder.add(run_id, results)
        recorder.finish(run_id, SuiteEnd(status="finished", exit_code=1, duration_s=1.0))
    finally:
        recorder.close()


def record_pair(store: Store) -> None:
    """Suite runs `base` (evals 0-279) and `head` (evals 20-299)."""
    record_seeded(store, "base", range(0, EVALS - 20), seed=1, good=0.7)
    record_seeded(store, "head", range(20, EVALS), seed=2, good=0.4)
