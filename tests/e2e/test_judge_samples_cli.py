"""`niceeval run --judge-samples K`: every judge call asked K times, unstable verdicts counted, repeats free."""

from __future__ import annotations

import itertools

import pytest

from niceeval.testing import LLMRequest, LLMServer, Reply

from ._project import Project

CONFIG = """\
from niceeval import define_config


def echo(message: str) -> str:
    return "echo: " + message


config = define_config(agent=echo, judge={"model": "openai/judge"})
"""

EVALS = """\
from niceeval import define_eval


@define_eval
async def polite(t):
    await t.send("hello")
    t.judge.rubric("Is the reply polite?").at_least(0.7)
    t.judge.rubric("Is the reply short?", samples=1).at_least(0.7)
"""


@pytest.fixture
def server(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    polite, short = itertools.cycle([0.72, 0.68, 0.74]), itertools.repeat(0.9)

    def script(request: LLMRequest) -> Reply:
        score = next(polite if "polite" in request.last_user_text else short)
        return Reply(data={"reason": f"scored {score}", "pass": True, "score": score})

    llm_server.set_script(script)
    return llm_server


def test_judge_samples_asks_k_times_counts_unstable_and_a_repeat_is_free(project: Project, server: LLMServer) -> None:
    project.write("niceeval.config.py", CONFIG)
    project.write("evals/judged.py", EVALS)
    result = project.run("--judge-samples", "3")
    assert result.code == 0, result.output
    assert len(server.requests) == 4  # 3 samples of the first judge, 1 of the second (its samples=1 wins)
    polite, short = result.eval("polite")["runs"][0]["assertions"]
    assert (polite["unstable"], len(polite["judge_calls"]), polite["score"]) == (True, 3, pytest.approx(0.7133, 1e-3))
    assert sorted(call["score"] for call in polite["judge_calls"]) == [0.68, 0.72, 0.74]
    assert (short["unstable"], len(short["judge_calls"])) == (False, 1)
    assert result.report()["summary"]["unstable_assertions"] == 1
    assert "1 unstable" in result.stdout and "[unstable, passed]" in result.stdout
    again = project.run("--judge-samples", "3")
    assert again.code == 0, again.output
    assert len(server.requests) == 4  # every sample came from the cache
    repeat = again.eval("polite")["runs"][0]["assertions"][0]
    assert [call["cached"] for call in repeat["judge_calls"]] == [True, True, True]
    assert repeat["score"] == pytest.approx(polite["score"])


def test_judge_samples_must_be_at_least_one(project: Project) -> None:
    result = project.run("--judge-samples", "0")
    assert result.code == 2 and "--judge-samples must be at least 1" in result.stderr
