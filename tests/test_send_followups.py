"""`t.send(text, followups=N)`: clarification questions are detected by a model and answered, over real HTTP."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from niceeval import EvalContext, define_eval
from niceeval._core.results import RunResult
from niceeval._core.settings import JudgeSettings
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.agents import FunctionSession
from niceeval.testing import LLMServer, Reply, TokenUsage


def asks_first(message: str) -> str:
    if "1234" in message:
        return "Order 1234 is on its way."
    return "Which order do you mean?"


def run(spec: EvalSpec, judge_model: str | None) -> RunResult:
    entry = EvalEntry(id=f"x.py::{spec.name}", spec=spec)
    options = ExecOptions(timeout=30, agent=asks_first, judge=JudgeSettings(model=judge_model))
    return anyio.run(execute, entry, 0, options)


@pytest.fixture
def decider(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    return llm_server


def test_a_clarifying_question_is_answered_and_the_final_turn_returned(decider: LLMServer) -> None:
    decider.push({"asks_user": True, "answer": "Order 1234, please."}, {"asks_user": False, "answer": ""})
    turns: list[Any] = []

    @define_eval
    async def ev(t: EvalContext) -> None:
        turns.append(await t.send("Where is my order?", followups=2))

    result = run(ev, "openai/scripted")
    assert result.error is None
    assert turns[0].message == "Order 1234 is on its way."
    assert [e.text for e in result.events if e.type == "message"] == [  # type: ignore[union-attr]
        "Where is my order?",
        "Which order do you mean?",
        "Order 1234, please.",
        "Order 1234 is on its way.",
    ]
    assert "Which order do you mean?" in decider.requests[0].body["messages"][-1]["content"]


def test_followups_stop_when_the_reply_is_not_a_question(decider: LLMServer) -> None:
    decider.push({"asks_user": False, "answer": ""})

    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("Where is my order?", followups=3)

    result = run(ev, "openai/scripted")
    assert len([e for e in result.events if e.type == "message"]) == 2
    assert len(decider.requests) == 1


def test_followups_without_a_judge_model_say_how_to_set_one() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("Where is my order?", followups=1)

    result = run(ev, None)
    assert result.error is not None and "define_config(judge={'model'" in result.error.message


def test_an_unreachable_followup_model_is_an_error_event_not_a_crash(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    @define_eval
    async def ev(t: EvalContext) -> None:
        turn = await t.send("Where is my order?", followups=1)
        t.not_event("error")
        assert turn.message == "Which order do you mean?"

    result = run(ev, "openai/scripted")
    assert result.error is None
    assert result.assertions[0].state == "failed"
    assert "OPENAI_API_KEY" in result.assertions[0].reason


def asks_first_and_spends(message: str, session: FunctionSession) -> str:
    session.usage("openai/gpt-4o-mini", input_tokens=100, output_tokens=10)
    return asks_first(message)


def _billing_run(decider: LLMServer, body: Any) -> RunResult:
    detector = TokenUsage(input_tokens=700, output_tokens=30)
    decider.push(
        Reply(data={"asks_user": True, "answer": "Order 1234, please."}, usage=detector),
        Reply(data={"asks_user": False, "answer": ""}, usage=detector),
    )
    spec = define_eval(body)
    entry = EvalEntry(id=f"x.py::{spec.name}", spec=spec)
    options = ExecOptions(timeout=30, agent=asks_first_and_spends, judge=JudgeSettings(model="openai/house-judge"))
    return anyio.run(execute, entry, 0, options)


def test_followup_detection_is_judge_spend_not_agent_usage(decider: LLMServer) -> None:
    seen: list[Any] = []

    async def ev(t: EvalContext) -> None:
        turn = await t.send("Where is my order?", followups=2)
        seen.extend([t.usage, turn.usage])
        t.max_cost(1.0)  # the detector's model has no price: it must not make the agent's cost unknown

    result = _billing_run(decider, ev)
    run_usage, turn_usage = seen
    assert (run_usage.input_tokens, run_usage.output_tokens) == (200, 20)  # two agent calls, no detector
    assert (result.agent_spend.calls, result.agent_spend.tokens, result.agent_spend.unpriced) == (2, 220, [])
    assert (result.judge_spend.calls, result.judge_spend.tokens) == (2, 1460)
    assert result.judge_spend.cost is None and result.judge_spend.unpriced == ["openai/house-judge"]
    assert [a.state for a in result.assertions] == ["passed"]


def test_a_turn_with_followups_covers_every_sub_turn(decider: LLMServer) -> None:
    turns: list[Any] = []

    async def ev(t: EvalContext) -> None:
        turns.append(await t.send("Where is my order?", followups=2))

    _billing_run(decider, ev)
    (turn,) = turns
    assert turn.message == "Order 1234 is on its way."
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (200, 20)
    texts = [e.text for e in turn.events if e.type == "message"]
    assert texts[0] == "Where is my order?" and texts[-1] == "Order 1234 is on its way." and len(texts) == 4
