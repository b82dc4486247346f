"""Malformed structured output gets one repair turn that says what was wrong; a second miss is a parse error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from judge_helpers import PROVIDER_MODELS, RUBRIC_PASS, Run, answer

from niceeval.testing import LLMRequest, Reply, TokenUsage

USAGE = TokenUsage(input_tokens=100, output_tokens=10)


def first_bad_then(bad: dict[str, Any], good: dict[str, Any]) -> Callable[[LLMRequest], Reply]:
    """Answer `bad` to the first question and `good` to the repair turn."""

    def script(request: LLMRequest) -> Reply:
        repairing = any(m.role == "assistant" for m in request.messages)
        return answer(request, good if repairing else bad, USAGE)

    return script


@pytest.mark.parametrize("model", PROVIDER_MODELS)
def test_a_missing_field_is_repaired(run: Run, model: str) -> None:
    run.server.set_script(first_bad_then({"reason": "ok", "score": 0.9}, RUBRIC_PASS))
    (result,) = run(lambda t: t.rubric("Is it polite?", model=model))
    assert (result.state, result.score) == ("passed", 0.9)
    repair = run.server.requests[1].messages[-1].content
    assert "pass: Field required" in repair
    (call,) = result.judge_calls
    assert len(call.messages) == 4
    assert (call.input_tokens, call.output_tokens) == (200, 20)  # both requests count


@pytest.mark.parametrize("model", PROVIDER_MODELS)
def test_a_score_outside_0_1_is_repaired_then_a_parse_error(run: Run, model: str) -> None:
    run.server.set_script(lambda request: answer(request, {"reason": "great", "pass": True, "score": 7}))
    (result,) = run(lambda t: t.rubric("Is it polite?", model=model))
    assert (result.state, result.cause, result.score) == ("inconclusive", "parse_error", None)
    assert "score: Input should be less than or equal to 1" in result.reason
    assert "less than or equal to 1" in run.server.requests[1].messages[-1].content
    assert len(run.server.requests) == 2


def test_an_unknown_choice_is_repaired(run: Run) -> None:
    run.server.set_script(first_bad_then({"reason": "hm", "choice": "maybe"}, {"reason": "it is", "choice": "yes"}))
    (result,) = run(lambda t: t.autoevals.closed_qa("Is it polite?"))
    assert result.score == 1.0
    assert "choice must be one of yes, no; got 'maybe'" in run.server.requests[1].messages[-1].content


def test_a_g_eval_score_outside_1_5_is_repaired(run: Run) -> None:
    good = {"steps": ["Check tone"], "assessment": "fine", "score": 5}
    run.server.set_script(first_bad_then({"steps": ["Check tone"], "assessment": "fine", "score": 9}, good))
    (result,) = run(lambda t: t.g_eval("Polite"))
    assert result.score == 1.0 and len(run.server.requests) == 2
