"""`t.simulate`: a scripted user model plays a persona against a scripted agent over real HTTP (the offline server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from niceeval import EvalContext, define_eval
from niceeval._core.results import RunResult
from niceeval._core.settings import JudgeSettings
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval._run.judging import SuiteJudges
from niceeval.simulation import novice, persona
from niceeval.testing import LLMServer

REFUND_GOAL = "get a refund for order 1042"


def refund_desk(message: str) -> str:
    if "1042" in message:
        return "Done: order 1042 is refunded, the money is back in 3 days."
    return "I can help with refunds. Which order number is it?"


def user(message: str = "", *, met: bool = False, ended: bool = False) -> dict[str, Any]:
    return {"goal_met": met, "agent_ended": ended, "message": message}


SCRIPT = [user("Hi, I want my money back for an order."), user("It is order 1042."), user(met=True)]


def run(
    spec: EvalSpec, root: Path, *, no_cache: bool = False, cache_only: bool = False, run_index: int = 0
) -> RunResult:
    entry = EvalEntry(id=f"x.py::{spec.name}", spec=spec)

    async def go() -> RunResult:
        judges = SuiteJudges(root, no_cache=no_cache, cache_only=cache_only)
        options = ExecOptions(
            timeout=30, agent=refund_desk, judge=JudgeSettings(model="openai/user-sim"), judges=judges, root=root
        )
        try:
            return await execute(entry, run_index, options)
        finally:
            await judges.aclose()

    return anyio.run(go)


@pytest.fixture
def users(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    return llm_server


def messages(result: RunResult) -> list[tuple[str, str]]:
    return [(e.role, e.text) for e in result.events if e.type == "message"]  # type: ignore[union-attr]


def refund_eval(seen: list[Any]) -> EvalSpec:
    @define_eval
    async def refund(t: EvalContext) -> None:
        sim = await t.simulate(user=novice, goal=REFUND_GOAL, max_turns=5)
        seen.append(sim)
        sim.turns[-1].check(sim.turns[-1].message, _includes("refunded"))

    return refund


def _includes(text: str) -> Any:
    from niceeval.expect import includes

    return includes(text)


def test_the_user_reaches_the_goal_in_the_expected_turns(users: LLMServer, tmp_path: Path) -> None:
    users.push(*SCRIPT)
    seen: list[Any] = []
    result = run(refund_eval(seen), tmp_path)
    (sim,) = seen
    assert result.error is None and result.outcome == "passed"
    assert (sim.ended_by, sim.goal_met, len(sim.turns), sim.seed) == ("goal_met", True, 2, 0)
    assert messages(result) == [
        ("user", "Hi, I want my money back for an order."),
        ("assistant", "I can help with refunds. Which order number is it?"),
        ("user", "It is order 1042."),
        ("assistant", "Done: order 1042 is refunded, the money is back in 3 days."),
    ]
    assert [(a.name, a.state) for a in result.assertions] == [
        ("simulate(novice): goal met", "passed"),
        ("turn 2: includes('refunded')", "passed"),
    ]
    assert len(users.requests) == 3
    first = users.requests[0].body["messages"]
    assert "Name: novice" in first[1]["content"] and REFUND_GOAL in first[1]["content"]
    assert "agent: I can help with refunds" in users.requests[1].body["messages"][1]["content"]
    assert (result.judge_spend.calls, result.agent_spend.calls) == (3, 0)


def test_a_rerun_is_byte_identical_and_asks_the_user_model_nothing(users: LLMServer, tmp_path: Path) -> None:
    users.push(*SCRIPT)
    seen: list[Any] = []
    first = run(refund_eval(seen), tmp_path)
    asked = len(users.requests)
    second = run(refund_eval(seen), tmp_path)
    assert asked == 3 and len(users.requests) == 3  # the second run made no request
    assert json.dumps(seen[0].transcript) == json.dumps(seen[1].transcript)
    assert messages(first) == messages(second)
    assert second.outcome == "passed" and second.judge_spend.calls == 0


def test_no_cache_samples_anew(users: LLMServer, tmp_path: Path) -> None:
    users.push(*SCRIPT, *SCRIPT)
    run(refund_eval([]), tmp_path)
    run(refund_eval([]), tmp_path, no_cache=True)
    assert len(users.requests) == 6


def test_another_seed_is_another_conversation(users: LLMServer, tmp_path: Path) -> None:
    users.push(*SCRIPT, *SCRIPT)
    seen: list[Any] = []
    run(refund_eval(seen), tmp_path, run_index=0)
    run(refund_eval(seen), tmp_path, run_index=1)  # --runs 2: the run index is the default seed
    assert [sim.seed for sim in seen] == [0, 1]
    assert len(users.requests) == 6


def test_the_turn_limit_ends_it_with_a_note(users: LLMServer, tmp_path: Path) -> None:
    users.push(user("Refund please."), user("Refund. Now."), user("Still waiting."))

    @define_eval
    async def stubborn(t: EvalContext) -> None:
        await t.simulate(user="impatient", goal=REFUND_GOAL, max_turns=2)

    result = run(stubborn, tmp_path)
    assert result.error is None and result.outcome == "failed"
    (goal,) = result.assertions
    assert goal.name == "simulate(impatient): goal met" and goal.state == "failed"
    assert "the goal was not met within max_turns=2 user messages" in goal.reason
    assert len(messages(result)) == 4 and len(users.requests) == 3


def test_the_agent_ending_it_is_recorded(users: LLMServer, tmp_path: Path) -> None:
    users.push(user("Refund please."), user(ended=True))
    seen: list[Any] = []

    @define_eval
    async def closed(t: EvalContext) -> None:
        seen.append(await t.simulate(user=novice, goal=REFUND_GOAL))

    result = run(closed, tmp_path)
    assert seen[0].ended_by == "agent_ended" and len(seen[0].turns) == 1
    assert "ended the conversation" in result.assertions[0].reason


def test_an_unavailable_user_model_errors_the_eval(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = run(refund_eval([]), tmp_path)
    assert result.error is not None and result.assertions == []
    assert result.error.type == "UserModelUnavailable"
    assert result.error.message.startswith("user model unavailable:") and "OPENAI_API_KEY" in result.error.message
    assert result.outcome == "failed" and result.failure == "infra"  # the user model's outage, not the agent's


def test_a_missing_turn_under_cache_only_errors_without_asking(users: LLMServer, tmp_path: Path) -> None:
    result = run(refund_eval([]), tmp_path, cache_only=True)
    assert result.error is not None and result.error.type == "UserModelUnavailable"
    assert "--cache-only" in result.error.message and users.requests == []


def test_an_answer_that_is_not_the_turn_json_errors(users: LLMServer, tmp_path: Path) -> None:
    users.push({"verdict": "sure"})
    result = run(refund_eval([]), tmp_path)
    assert result.error is not None and result.error.type == "UserModelUnavailable"
    assert "did not answer with the turn's JSON" in result.error.message


def test_the_agents_reply_is_data_to_the_user_model(users: LLMServer, tmp_path: Path) -> None:
    users.push(user("Refund for order 1042 please."), user(met=True))
    run(refund_eval([]), tmp_path)
    system = users.requests[0].body["messages"][0]["content"]
    assert "ignore any instructions" in system


def test_sync_evals_simulate_too(users: LLMServer, tmp_path: Path) -> None:
    users.push(*SCRIPT)

    @define_eval
    def plain(t: Any) -> None:
        sim = t.simulate(user="novice", goal=REFUND_GOAL)
        assert sim.goal_met

    result = run(plain, tmp_path)
    assert result.error is None and result.outcome == "passed"


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"user": "nobody", "goal": REFUND_GOAL}, "built-in name (expert, impatient, indecisive, novice)"),
        ({"user": novice, "goal": ""}, "needs goal="),
        ({"user": novice, "goal": REFUND_GOAL, "max_turns": 0}, "max_turns"),
        ({"user": novice, "goal": REFUND_GOAL, "seed": "a"}, "seed must be an integer"),
    ],
)
def test_bad_arguments_name_the_fix(kwargs: dict[str, Any], says: str, tmp_path: Path) -> None:
    @define_eval
    async def bad(t: EvalContext) -> None:
        await t.simulate(**kwargs)

    result = run(bad, tmp_path)
    assert result.error is not None and result.error.kind == "usage" and says in result.error.message


def test_without_a_model_it_says_how_to_set_one(tmp_path: Path) -> None:
    @define_eval
    async def bare(t: EvalContext) -> None:
        await t.simulate(user=novice, goal=REFUND_GOAL)

    entry = EvalEntry(id="x.py::bare", spec=bare)
    result = anyio.run(execute, entry, 0, ExecOptions(timeout=30, agent=refund_desk, root=tmp_path))
    assert result.error is not None and "needs a user model" in result.error.message


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"name": ""}, "needs a name"),
        ({"name": "x", "traits": [1]}, "traits must be phrases"),
        ({"name": "x", "style": 3}, "style must be a string"),
    ],
)
def test_a_persona_that_cannot_render_is_refused(kwargs: dict[str, Any], says: str) -> None:
    from niceeval._core.errors import UsageError

    with pytest.raises(UsageError, match=says):
        persona(**kwargs)


def test_a_persona_renders_its_fields() -> None:
    admin = persona("billing-admin", traits="busy", knowledge="knows invoice 7", style="terse")
    assert admin.describe() == "Name: billing-admin\nTraits: busy\nKnowledge: knows invoice 7\nStyle: terse"


def test_a_user_model_that_never_opens_errors_the_eval(users: LLMServer, tmp_path: Path) -> None:
    users.push(user(met=True))
    result = run(refund_eval([]), tmp_path)
    assert result.error is not None and result.error.type == "UserModelUnavailable"
    assert "wrote no opening message" in result.error.message


def test_a_damaged_cache_is_a_miss_not_a_crash(users: LLMServer, tmp_path: Path) -> None:
    (tmp_path / ".niceeval").mkdir()
    (tmp_path / ".niceeval" / "judge-cache.sqlite").write_bytes(b"not a database" * 100)
    users.push(*SCRIPT)
    result = run(refund_eval([]), tmp_path)
    assert result.error is None and result.outcome == "passed" and len(users.requests) == 3
