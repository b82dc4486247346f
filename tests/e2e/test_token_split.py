"""A run's record splits tokens into input, output and cache-read, agent and judge apart (JSON and JUnit)."""

from __future__ import annotations

import pytest

from niceeval.testing import LLMRequest, LLMServer, Reply, TokenUsage

from ._project import Project
from .test_judge_cli import RUBRIC_PASS, answer

CONFIG = """\
from niceeval import define_config
from niceeval.agents import openai_agent

config = define_config(agent=openai_agent("openai/agent-model"), judge={"model": "openai/judge"})
"""

EVAL = """\
from niceeval import define_eval


@define_eval
async def judged(t):
    await t.send("hello")
    t.judge.rubric("Is the reply polite?")
"""


def script(request: LLMRequest) -> Reply:
    if request.model == "judge":
        return answer(request, RUBRIC_PASS, TokenUsage(input_tokens=300, output_tokens=40, cached_tokens=120))
    return Reply(text="Hello!", usage=TokenUsage(input_tokens=1000, output_tokens=200, cached_tokens=400))


def test_the_run_record_splits_tokens_for_agent_and_judge(
    project: Project, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    llm_server.set_script(script)
    project.write("niceeval.config.py", CONFIG)
    project.write("evals/split.py", EVAL)
    result = project.run()
    assert result.code == 0, result.output
    run = result.eval("judged")["runs"][0]
    agent, judge = run["agent_spend"], run["judge_spend"]
    assert (agent["input_tokens"], agent["output_tokens"], agent["cache_read_tokens"], agent["tokens"]) == (
        600,
        200,
        400,
        1200,
    )
    assert (judge["input_tokens"], judge["output_tokens"], judge["cache_read_tokens"], judge["tokens"]) == (
        180,
        40,
        120,
        340,
    )
    summary = result.report()["summary"]
    assert (summary["agent_spend"]["cache_read_tokens"], summary["judge_spend"]["cache_read_tokens"]) == (400, 120)
    properties = {
        p.get("name"): p.get("value") for p in result.testcase("judged").iter("property")
    }
    assert properties["agent.input_tokens"] == "600" and properties["agent.cache_read_tokens"] == "400"
    assert properties["judge.output_tokens"] == "40" and properties["judge.cache_read_tokens"] == "120"
    assert properties["agent.calls"] == "1" and properties["judge.calls"] == "1"
