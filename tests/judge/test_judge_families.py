"""Each judge family: what it sends on both providers, and how the answer becomes a score."""

from __future__ import annotations

from typing import Any

import pytest
from judge_helpers import ANTHROPIC, OPENAI, PROVIDER_MODELS, RUBRIC_PASS, Run, always, answer

from niceeval.judge import Judge
from niceeval.testing import LLMRequest, Reply

CHOICES = {
    "factuality": {"same": 1.0, "differs_harmlessly": 1.0, "superset": 0.6, "subset": 0.4, "conflicts": 0.0},
    "closed_qa": {"yes": 1.0, "no": 0.0},
    "summarizes": {"faithful_and_complete": 1.0, "faithful_but_incomplete": 0.5, "unfaithful": 0.0},
    "summary": {"reference": 0.0, "output": 1.0},
}


def call_family(judge: Judge, family: str, model: str) -> None:
    if family == "factuality":
        judge.autoevals.factuality("Paris is the capital of France.", model=model)
    elif family == "closed_qa":
        judge.autoevals.closed_qa("Does it name a city?", model=model)
    elif family == "summary":
        judge.autoevals.summary("Paris is the capital of France.", model=model)
    else:
        judge.summarizes("Paris, on the Seine, is the capital of France.", model=model)


@pytest.mark.parametrize("model", PROVIDER_MODELS)
@pytest.mark.parametrize("family", list(CHOICES))
def test_choice_family_scores_each_choice(run: Run, family: str, model: str) -> None:
    for choice, score in CHOICES[family].items():
        run.server.set_script(always({"reason": f"picked {choice}", "choice": choice}))
        (result,) = run(lambda t: call_family(t, family, model))
        assert (result.score, result.reason, result.cause) == (score, f"picked {choice}", None)
        assert result.severity == "soft" and result.threshold == 0.7
        assert result.state == ("passed" if score >= 0.7 else "failed")


@pytest.mark.parametrize("model", PROVIDER_MODELS)
def test_factuality_sends_the_reference_and_the_reply_as_tagged_data(run: Run, model: str) -> None:
    run.server.set_script(always({"reason": "same facts", "choice": "same"}))
    run(lambda t: t.autoevals.factuality("Paris is the capital of France.", model=model))
    (request,) = run.server.requests
    user = request.last_user_text
    assert "<reference-" in user and "Paris is the capital of France." in user
    assert user.index("<reference-") < user.index("<output-") < user.index("Your refund is on its way.")
    assert "contradicts the reference" in user
    assert "untrusted" in request.system


@pytest.mark.parametrize("model", PROVIDER_MODELS)
def test_summarizes_sends_the_source(run: Run, model: str) -> None:
    run.server.set_script(always({"reason": "faithful", "choice": "faithful_and_complete"}))
    (result,) = run(lambda t: t.summarizes({"doc": "Paris is in France."}, model=model))
    user = run.server.requests[0].last_user_text
    assert "<source-" in user and '"doc": "Paris is in France."' in user
    assert result.name == "summarizes" and result.score == 1.0


def test_closed_qa_puts_the_criteria_in_the_task(run: Run) -> None:
    run.server.set_script(always({"reason": "it is", "choice": "yes"}))
    (result,) = run(lambda t: t.autoevals.closed_qa("Is the reply polite?"))
    assert "Is the reply polite?" in run.server.requests[0].last_user_text
    assert result.name == "closed_qa('Is the reply polite?')"
    assert result.expected == "Is the reply polite?" and result.actual == "Your refund is on its way."


def test_openai_gets_a_strict_json_schema_response_format(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    run(lambda t: t.rubric("Is it polite?", model=OPENAI))
    (request,) = run.server.requests
    fmt = request.body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    schema = request.output_schema
    assert schema is not None
    assert schema["required"] == ["reason", "pass", "score"] and schema["additionalProperties"] is False
    assert [m.role for m in request.messages] == ["system", "user"]


def test_anthropic_is_forced_to_call_the_verdict_tool(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    (result,) = run(lambda t: t.rubric("Is it polite?", model=ANTHROPIC))
    (request,) = run.server.requests
    assert request.body["tool_choice"] == {"type": "tool", "name": "record_verdict"}
    (tool,) = request.tools
    assert tool.name == "record_verdict" and tool.parameters["required"] == ["reason", "pass", "score"]
    assert request.body["system"].startswith("You are a careful, impartial evaluator")
    assert result.state == "passed" and result.judge_calls[0].model == ANTHROPIC


def test_anthropic_answer_as_plain_json_text_is_accepted(run: Run) -> None:
    run.server.push(RUBRIC_PASS)
    (result,) = run(lambda t: t.rubric("Is it polite?", model=ANTHROPIC))
    assert result.score == 0.9 and len(run.server.requests) == 1


@pytest.mark.parametrize("model", PROVIDER_MODELS)
def test_rubric_passes_when_the_judge_says_pass_and_the_score_reaches_the_threshold(run: Run, model: str) -> None:
    answers = [
        {"reason": "good", "pass": True, "score": 0.8},
        {"reason": "says fail", "pass": False, "score": 0.95},
        {"reason": "too low", "pass": True, "score": 0.5},
    ]
    run.server.set_script(lambda request: answers_by_text(request, answers))
    results = run(lambda t: [t.rubric(f"rubric {i}", model=model).at_least(0.7) for i in range(3)])
    assert [(r.state, r.score) for r in results] == [("passed", 0.8), ("failed", 0.95), ("failed", 0.5)]
    assert results[1].reason == "says fail"
    assert [r.shortfall() for r in results[1:]] == ["judge said fail (score 0.95)", "score 0.50 < 0.70"]
    assert [c.passed for r in results for c in r.judge_calls] == [True, False, True]


def answers_by_text(request: LLMRequest, answers: list[dict[str, Any]]) -> Reply:
    index = next(i for i in range(len(answers)) if f"rubric {i}" in request.last_user_text)
    return answer(request, answers[index])


@pytest.mark.parametrize("model", PROVIDER_MODELS)
def test_g_eval_asks_for_steps_before_the_score_and_maps_1_to_5(run: Run, model: str) -> None:
    verdict = {"steps": ["Check tone", "Check facts"], "assessment": "Polite and correct.", "score": 4}
    run.server.set_script(always(verdict))
    (result,) = run(lambda t: t.g_eval("Polite and factually correct", model=model))
    schema = run.server.requests[0].output_schema or run.server.requests[0].tools[0].parameters
    assert list(schema["properties"]) == ["steps", "assessment", "score"]
    assert "before judging anything" in run.server.requests[0].last_user_text
    assert result.score == 0.75 and result.state == "passed"
    assert result.reason == "Polite and correct. (steps: 1. Check tone 2. Check facts; score 4/5)"


def test_tokens_latency_and_prompt_are_recorded(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    (result,) = run(lambda t: t.rubric("Is it polite?"))
    (call,) = result.judge_calls
    request = run.server.requests[0]
    assert call.messages == [{"role": m.role, "content": m.content} for m in request.messages]
    assert call.input_tokens > 0 and call.output_tokens > 0 and call.latency > 0
    assert (call.model, call.cached, call.fallback, call.cause, call.score, call.passed) == (
        OPENAI,
        False,
        False,
        None,
        0.9,
        True,
    )
