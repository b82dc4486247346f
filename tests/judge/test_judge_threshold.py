"""Rubric pass vs score (promptfoo's rule), `default_threshold`, and the words a judge miss is reported with."""

from __future__ import annotations

from typing import Any

import pytest
from judge_helpers import Run, always

from niceeval._core.assertion import AssertionResult, JudgeCall


def _rubric(run: Run, verdict: dict[str, Any], *, at_least: float | None = None) -> AssertionResult:
    run.server.set_script(always(verdict))
    if at_least is None:
        (result,) = run(lambda t: t.rubric("Is the reply helpful?"))
    else:
        (result,) = run(lambda t: t.rubric("Is the reply helpful?").at_least(at_least))
    return result


def test_rubric_without_a_threshold_passes_when_the_judge_says_pass_whatever_the_score(run: Run) -> None:
    result = _rubric(run, {"reason": "partly helpful", "pass": True, "score": 0.5})
    assert (result.state, result.score, result.threshold) == ("passed", 0.5, 0.0)


def test_rubric_without_a_threshold_fails_when_the_judge_says_fail_whatever_the_score(run: Run) -> None:
    result = _rubric(run, {"reason": "helpful but rude", "pass": False, "score": 0.9})
    assert (result.state, result.score) == ("failed", 0.9)
    assert result.shortfall() == "judge said fail (score 0.90)"


def test_rubric_with_at_least_needs_both_the_pass_and_the_score(run: Run) -> None:
    result = _rubric(run, {"reason": "partly helpful", "pass": True, "score": 0.5}, at_least=0.7)
    assert (result.state, result.threshold) == ("failed", 0.7)
    assert result.shortfall() == "score 0.50 < 0.70"


@pytest.mark.parametrize(("score", "state"), [(0.5, "failed"), (0.8, "passed")])
def test_rubric_uses_default_threshold_when_the_settings_set_it(run: Run, score: float, state: str) -> None:
    run.settings = {"model": "openai/gpt-4o-mini", "default_threshold": 0.7}
    result = _rubric(run, {"reason": "r", "pass": True, "score": score})
    assert (result.state, result.threshold) == (state, 0.7)


def test_score_only_judges_keep_0_7_when_default_threshold_is_unset(run: Run) -> None:
    run.server.set_script(always({"reason": "steps", "assessment": "fair", "steps": ["check"], "score": 3}))
    (result,) = run(lambda t: t.g_eval("Is it clear?"))
    assert (result.state, result.score, result.threshold) == ("failed", 0.5, 0.7)


def test_score_only_judges_follow_a_set_default_threshold(run: Run) -> None:
    run.settings = {"model": "openai/gpt-4o-mini", "default_threshold": 0.4}
    run.server.set_script(always({"reason": "steps", "assessment": "fair", "steps": ["check"], "score": 3}))
    (result,) = run(lambda t: t.g_eval("Is it clear?"))
    assert (result.state, result.threshold) == ("passed", 0.4)


def test_a_judge_that_says_fail_under_the_threshold_names_both(run: Run) -> None:
    result = _rubric(run, {"reason": "unhelpful", "pass": False, "score": 0.2}, at_least=0.7)
    assert result.shortfall() == "judge said fail, score 0.20 < 0.70"


def test_a_score_only_judge_miss_names_the_score_and_threshold() -> None:
    result = AssertionResult(
        name="closed_qa",
        severity="soft",
        score=0.0,
        threshold=0.7,
        state="failed",
        judge_calls=[JudgeCall(model="openai/m", score=0.0)],
    )
    assert result.shortfall() == "score 0.00 < 0.70"
