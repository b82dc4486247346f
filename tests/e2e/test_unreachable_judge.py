"""A judge that cannot connect says which URL it tried; a suite left with inconclusive verdicts says how to fail."""

from __future__ import annotations

import anyio
import openai

from niceeval.providers import classify

from ._project import Project

CONFIG = """\
from niceeval import define_config

config = define_config(
    agent=lambda message: "Hello!", judge={"model": "openai/gpt-5-mini", "max_retries": 0, "timeout": 5}
)
"""

EVAL = """\
from niceeval import define_eval


@define_eval
async def judged(t):
    await t.send("hi")
    t.judge.rubric("Is the reply polite?")
"""

NOWHERE = "http://127.0.0.1:9/v1"  # the discard port: nothing listens, the connection is refused at once


def test_a_connection_error_names_the_url_tried_and_where_it_comes_from() -> None:
    async def ask() -> BaseException:
        async with openai.AsyncOpenAI(api_key="k", base_url=NOWHERE, max_retries=0, timeout=5) as client:
            try:
                await client.models.list()
            except openai.APIConnectionError as exc:
                return exc
        raise AssertionError("the request reached something")

    error, retry = classify(anyio.run(ask), "openai/gpt-5-mini")
    assert retry
    assert str(error).startswith("openai/gpt-5-mini: could not connect to http://127.0.0.1:9/v1/models (")
    assert str(error).endswith("check OPENAI_BASE_URL or base_url=")


def test_an_unreachable_judge_is_inconclusive_naming_the_url_and_the_flag_that_fails_it(project: Project) -> None:
    project.write("niceeval.config.py", CONFIG)
    project.write("evals/judged.py", EVAL)
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": NOWHERE}
    lenient = project.run("--no-store", env=env)
    assert lenient.code == 0, lenient.output
    assert "could not connect to http://127.0.0.1:9/v1/chat/completions" in lenient.stdout
    assert "1 inconclusive: no verdict" in lenient.stdout
    assert "add --fail-on-inconclusive to make them fail the suite." in lenient.stdout
    strict = project.run("--no-store", "--fail-on-inconclusive", env=env)
    assert strict.code == 1, strict.output
    assert "--fail-on-inconclusive to make them" not in strict.stdout
