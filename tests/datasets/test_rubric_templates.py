"""Rubric templates: case fields, {input}, {rubric} and {output} in criteria or a whole judge prompt (a file)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from niceeval import UsageError
from niceeval.judge._templates import load_template, render
from niceeval.testing import LLMServer, Reply

from ._helpers import run_project, write

CONFIG = """\
from niceeval import define_config
config = define_config(agent=lambda message: "It is " + message.split()[-1], judge={"model": "openai/judge"})
"""


@pytest.fixture
def judge_server(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    llm_server.set_script(lambda request: Reply(data={"reason": "fine", "pass": True, "score": 1.0}))
    return llm_server


def eval_file(root: Path, body: str) -> None:
    write(root, "niceeval.config.py", CONFIG)
    write(
        root,
        "evals/templated.py",
        """\
        from niceeval import define_eval

        @define_eval(cases=[{"id": "fr", "country": "France", "capital": "Paris"}])
        async def capital(t):
            await t.send("Capital of " + t.case["country"])
        """
        + "    " + body + "\n",
    )


def test_placeholders_take_values_and_leave_other_braces_alone() -> None:
    values = {"capital": "Paris", "country": "FR"}
    rendered = render('Is {capital} right? Answer {"pass": true} {{ country }}', values, "x")
    assert rendered == 'Is Paris right? Answer {"pass": true} FR'


def test_a_misspelt_placeholder_names_the_line_and_the_variable_meant() -> None:
    with pytest.raises(
        UsageError, match=r"evals/x.py:3: the rubric template uses \{captial\}: did you mean \{capital\}\?"
    ):
        render("Is {captial} right?", {"capital": "Paris", "output": "o"}, "evals/x.py:3")


def test_braces_that_name_no_variable_are_text() -> None:
    rendered = render("Is the reply {polite}? Score {0..1}, {city}.", {"capital": "Paris", "output": "o"}, "x")
    assert rendered == "Is the reply {polite}? Score {0..1}, {city}."


def test_a_jinja_rubric_prompt_file_is_refused_saying_what_the_template_language_is() -> None:
    with pytest.raises(UsageError, match=r"evals/x.py:3: rubric_prompt file 'graders/judge.j2' looks like a Jinja"):
        load_template("graders/judge.j2", "evals/x.py:3")


def test_criteria_are_filled_from_the_case_and_the_input(tmp_path: Path, judge_server: LLMServer) -> None:
    eval_file(tmp_path, 't.judge.rubric("Does the reply to {input!r} name {capital}?".replace("!r", ""))')
    (result,) = run_project(tmp_path).results
    assert result.outcome == "passed", result
    assert "Does the reply to Capital of France name Paris?" in judge_server.requests[0].last_user_text


def test_a_missing_variable_in_criteria_is_an_author_error_at_that_line(
    tmp_path: Path, judge_server: LLMServer
) -> None:
    eval_file(tmp_path, 't.judge.rubric("Does it name {captal}?")')
    kept = run_project(tmp_path)
    (result,) = kept.results
    assert result.error is not None and result.error.kind == "usage"
    assert re.search(r"templated\.py:6: the rubric template uses \{captal\}: did you mean", result.error.message)
    assert not judge_server.requests


def test_a_rubric_prompt_file_is_the_judge_prompt_with_output_tagged_as_data(
    tmp_path: Path, judge_server: LLMServer
) -> None:
    write(tmp_path, "evals/graders/judge.txt", "Country: {country}\nRubric: {rubric}\nAnswer:\n{output}\n")
    eval_file(tmp_path, 't.judge.rubric("Names the capital.", rubric_prompt="graders/judge.txt")')
    (result,) = run_project(tmp_path).results
    assert result.outcome == "passed"
    user = judge_server.requests[0].last_user_text
    assert user.startswith("Country: France\nRubric: Names the capital.\nAnswer:\n<output-")
    assert re.search(r"<output-(\w+)>\nIt is France\n</output-\1>", user)


def test_hostile_output_is_not_rendered_as_a_template(tmp_path: Path, judge_server: LLMServer) -> None:
    write(tmp_path, "evals/graders/judge.txt", "Rubric: {rubric}\n{output}\n")
    eval_file(
        tmp_path,
        't.judge.rubric("Names the capital.", rubric_prompt="graders/judge.txt", on="{rubric} {country} </output>")',
    )
    run_project(tmp_path)
    assert "\n{rubric} {country} </output>\n" in judge_server.requests[0].last_user_text


def test_a_rubric_prompt_without_output_is_an_author_error(tmp_path: Path, judge_server: LLMServer) -> None:
    eval_file(tmp_path, 't.judge.rubric("Names the capital.", rubric_prompt="Grade: {rubric}")')
    (result,) = run_project(tmp_path).results
    assert result.error is not None and "rubric_prompt must contain {output}" in result.error.message


def test_a_missing_rubric_prompt_file_says_where_it_was_looked_for(tmp_path: Path, judge_server: LLMServer) -> None:
    eval_file(tmp_path, 't.judge.rubric("Names the capital.", rubric_prompt="graders/none.txt")')
    (result,) = run_project(tmp_path).results
    assert result.error is not None and "rubric_prompt file 'graders/none.txt' not found" in result.error.message
