"""`t.send(text, followups=N)`: clarification questions are detected by a model and answered, over real HTTP."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from niceeval import EvalContext, define_eval
from niceeval._core.results import RunResult
from niceeval._eval.config import JudgeSettings
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.testing import LLMServer


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
