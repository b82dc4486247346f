"""Suite runs written into a real results store through its own API, for page tests and the benchmark.

The end-to-end browser tests fill their store with real `niceeval run`s; the page tests here need exact
records (a judge call with a given prompt, a flip between two runs), so they build `RunResult`s directly.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from niceeval._core.assertion import AssertionResult, JudgeCall
from niceeval._core.errors import ErrorInfo
from niceeval._core.events import ActionCalledEvent, Event, MessageEvent, UsageEvent
from niceeval._core.outcome import Outcome
from niceeval._core.results import RunResult, Spend
from niceeval._core.summary import PlannedEval
from niceeval.store import Store, SuiteRunStart
from niceeval.store._models import SuiteKind, SuiteStatus
from niceeval.store._recorder import Recorder, SuiteEnd

__all__ = ["ActionCalledEvent", "ErrorInfo", "check", "demo_suite", "judged", "record", "result", "talk"]


def check(name: str, state: str = "passed", *, score: float | None = None, **fields: Any) -> AssertionResult:
    """A plain assertion result (gate, threshold 1) in `state`."""
    if score is None and state != "inconclusive":
        score = 1.0 if state == "passed" else 0.0
    return AssertionResult(
        name=name,
        severity=fields.pop("severity", "gate"),
        score=score,
        threshold=fields.pop("threshold", 1.0),
        state=state,  # type: ignore[arg-type]
        location=fields.pop("location", "evals/demo.py:12"),
        **fields,
    )


def judged(name: str, score: float, reason: str, *, reply: str, threshold: float = 0.7) -> AssertionResult:
    """A soft judge assertion with one judge call whose prompt quotes `reply`."""
    prompt = [
        {"role": "system", "content": "You are an expert evaluator."},
        {"role": "user", "content": f"<ai_response>\n{reply}\n</ai_response>\n<criteria>{name}</criteria>"},
    ]
    call = JudgeCall(model="openai/gpt-judge", messages=prompt, score=score, reason=reason, input_tokens=120,
                     output_tokens=30, cost=0.0004, latency=0.8)  # fmt: skip
    return AssertionResult(
        name=name,
        severity="soft",
        score=score,
        threshold=threshold,
        state="passed" if score >= threshold else "failed",
        reason=reason,
        location="evals/demo.py:20",
        judge_calls=[call],
    )


def talk(*rounds: tuple[str, str], tools: Sequence[ActionCalledEvent] = ()) -> list[Event]:
    """Events of a conversation: each round a user message and the assistant's reply (tools after round 1)."""
    events: list[Event] = []
    for number, (sent, reply) in enumerate(rounds):
        events.append(MessageEvent(role="user", text=sent))
        if number == 0:
            events.extend(tools)
        events.append(UsageEvent(model="openai/gpt-agent", input_tokens=50, output_tokens=20, cost=0.0001))
        events.append(MessageEvent(role="assistant", text=reply))
    for seq, event in enumerate(events):
        event.seq = seq
    return events


def result(
    eval_id: str,
    outcome: Outcome = "passed",
    *,
    run_index: int = 0,
    assertions: Sequence[AssertionResult] = (),
    events: Sequence[Event] = (),
    error: ErrorInfo | None = None,
    duration_s: float = 0.25,
) -> RunResult:
    """One eval run's record."""
    return RunResult(
        eval_id=eval_id,
        file=eval_id.split("::")[0],
        line=10,
        run_index=run_index,
        outcome=outcome,
        duration_s=duration_s,
        error=error,
        assertions=list(assertions),
        events=list(events),
        agent_spend=Spend(calls=1, tokens=70, cost=0.0001),
        judge_spend=Spend(calls=sum(len(a.judge_calls) for a in assertions), tokens=150, cost=0.0004),
    )


def record(
    store: Store,
    results: Sequence[RunResult],
    *,
    tags: dict[str, list[str]] | None = None,
    kind: SuiteKind = "run",
    status: SuiteStatus = "finished",
) -> str:
    """Write one suite run holding `results` (finished, of kind `run`, unless told); returns its id."""
    run_id = uuid.uuid4().hex[:12]
    plan: dict[str, PlannedEval] = {}
    for r in results:
        runs = 1 + max(x.run_index for x in results if x.eval_id == r.eval_id)
        plan.setdefault(
            r.eval_id, PlannedEval(id=r.eval_id, file=r.file, line=r.line, tags=tuple((tags or {}).get(r.eval_id, [])),
                                   runs=runs)
        )  # fmt: skip
    start = SuiteRunStart(id=run_id, command=["niceeval", "run"], git_commit="0123abcd" * 5, kind=kind)
    failed = any(r.outcome == "failed" for r in results)
    recorder = Recorder.of(store)
    try:
        recorder.begin(start, list(plan.values()))
        recorder.add(run_id, list(results))
        recorder.finish(run_id, SuiteEnd(status=status, exit_code=1 if failed else 0, duration_s=3.5))
    finally:
        recorder.close()
    return run_id


def demo_suite(store: Store, *, evals: int = 12, variant: int = 0) -> str:
    """A varied suite run: passes, soft misses, judge verdicts, tool calls, a crash, a skip, tags.

    `variant` shifts what one eval in twenty does, so consecutive suite runs show a few flips and score movement
    (as a real regression would), while most evals keep their outcome.
    """
    results = []
    tags: dict[str, list[str]] = {}
    for number in range(evals):
        eval_id = f"evals/support_{number % 3}.py::case_{number:03d}"
        tags[eval_id] = [["support"], ["billing", "support"], ["search"]][number % 3]
        results.append(_demo_result(eval_id, number, variant))
    return record(store, results, tags=tags)


def _demo_result(eval_id: str, number: int, variant: int) -> RunResult:
    kind = (number + (variant if number % 20 == 0 else 0)) % 7
    reply = f"Your refund for order #{1000 + number} is on its way."
    lookup = ActionCalledEvent(name="lookup_order", input={"order_id": str(1000 + number)},
                               output={"status": "shipped"})  # fmt: skip
    events = talk(("I want a refund", reply), ("Thanks, when?", "Within 5 days."), tools=[lookup])
    if kind == 0:
        trace = 'File "evals/demo.py", line 31, in case\n    order = data["order"]\nKeyError: \'order\''
        error = ErrorInfo(type="KeyError", message="'order'", location="evals/demo.py:31", traceback=trace)
        return result(eval_id, "failed", events=events, error=error, assertions=[
            check("includes('refund')"), judged("polite and specific", 0.35, "Curt; no timeline given.", reply=reply)
        ])  # fmt: skip
    if kind == 1:
        return result(eval_id, "scored", events=events, assertions=[
            check("includes('refund')"), judged("polite and specific", 0.6, "Polite but vague.", reply=reply)
        ])  # fmt: skip
    if kind == 2:
        return result(eval_id, "skipped")
    if kind == 3:
        return result(eval_id, "passed", events=events, assertions=[
            check("called_tool('lookup_order')"),
            check("judge: factual", "inconclusive", severity="soft", threshold=0.7, cause="no_api_key",
                  reason="no OPENAI_API_KEY: set it to run this judge"),
        ])  # fmt: skip
    score = 0.9 - 0.05 * (variant % 3)
    return result(eval_id, "passed", events=events, assertions=[
        check("includes('refund')"), check("called_tool('lookup_order')"),
        judged("polite and specific", score, "Polite, names the order and gives a timeline.", reply=reply),
    ], duration_s=0.4 + number % 5 * 0.3)  # fmt: skip
