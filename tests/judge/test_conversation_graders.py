"""t.judge.conversation: goal completion, role adherence and knowledge retention over the run's transcript."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from niceeval.testing import LLMServer, Reply
from tests.datasets._helpers import run_project, write

CONFIG = """\
from niceeval import define_config


def agent(message):
    return "Noted, your order is 1234." if "1234" in message else "Which order was it?"


config = define_config(agent=agent, judge={"model": "openai/judge"})
"""

EVAL = """\
from niceeval import define_eval


@define_eval
async def support(t):
    await t.send("My order 1234 is late.")
    await t.send("Where is it?")
    t.judge.conversation.goal_completion("The user learns where the order is.")
    t.judge.conversation.role_adherence("A polite support agent for an online shop")
    t.judge.conversation.knowledge_retention().gate()
"""


@pytest.fixture
def judge_server(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)

    def answer(request: Any) -> Reply:
        enum = request.output_schema["properties"]["choice"]["enum"]
        forgot = "retained" in enum and "Which order was it?" in request.last_user_text
        return Reply(data={"reason": "read the transcript", "choice": enum[-1] if forgot else enum[0]})

    llm_server.set_script(answer)
    return llm_server


def test_conversation_graders_judge_the_whole_transcript(tmp_path: Path, judge_server: LLMServer) -> None:
    write(tmp_path, "niceeval.config.py", CONFIG)
    write(tmp_path, "evals/support.py", EVAL)
    (result,) = run_project(tmp_path).results
    assert [(a.name, a.severity, a.score) for a in result.assertions] == [
        ("goal_completion", "soft", 1.0),
        ("role_adherence", "soft", 1.0),
        ("knowledge_retention", "gate", 0.0),  # the agent asked for the order it was given
    ]
    assert result.outcome == "failed"
    prompts = [r.last_user_text for r in judge_server.requests]
    assert len(prompts) == 3
    prompt = next(p for p in prompts if "get the user to this goal" in p)
    transcript = "User: My order 1234 is late.\nAssistant: Noted, your order is 1234.\nUser: Where is it?"
    assert transcript in prompt and "Assistant: Which order was it?" in prompt
    assert "The user learns where the order is." in prompt
    assert result.assertions[0].judge_calls[0].input is None  # the transcript holds the input


def test_without_a_key_they_are_inconclusive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    write(tmp_path, "niceeval.config.py", CONFIG)
    write(tmp_path, "evals/support.py", EVAL)
    (result,) = run_project(tmp_path).results
    assert [(a.state, a.cause) for a in result.assertions] == [("inconclusive", "no_api_key")] * 3
    assert result.outcome == "passed"


def test_judging_a_conversation_before_anything_was_said_names_the_line(tmp_path: Path) -> None:
    write(tmp_path, "niceeval.config.py", CONFIG)
    write(
        tmp_path,
        "evals/early.py",
        "from niceeval import define_eval\n\n@define_eval\nasync def early(t):\n"
        "    t.judge.conversation.knowledge_retention()\n",
    )
    (result,) = run_project(tmp_path).results
    assert result.error is not None and "nothing was said yet" in result.error.message
    assert (result.error.location or "").endswith("evals/early.py:5")


def test_conversation_entries_in_a_case_row(
    tmp_path: Path, judge_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from niceeval._eval.config import load_config
    from niceeval._run.discovery import discover
    from niceeval._run.plan import expand
    from tests.datasets.test_declared import run_targets

    monkeypatch.chdir(tmp_path)
    write(tmp_path, "niceeval.config.py", CONFIG)
    write(
        tmp_path,
        "data/chat.yaml",
        """\
        - input: My order 1234 is late.
          assert:
            - {type: goal_completion, value: The user learns where the order is.}
            - {type: role_adherence, value: A support agent, soft: true}
            - {type: knowledge_retention}
        """,
    )
    assert load_config(tmp_path) and expand(discover(tmp_path, ["data/chat.yaml"]).evals, root=tmp_path).errors == []
    (result,) = run_targets(tmp_path, ["data/chat.yaml"]).results
    assert [(a.name, a.severity, a.score) for a in result.assertions] == [
        ("goal_completion", "gate", 1.0),
        ("role_adherence", "soft", 1.0),
        ("knowledge_retention", "gate", 1.0),
    ]
