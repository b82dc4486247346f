"""`t.judge.vote`: several judges, unanimous by default or k of n; every voter's verdict is kept."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from judge_helpers import ANTHROPIC, OPENAI, Run, answer

from niceeval.testing import Fault, LLMRequest, Reply

PASS = {"reason": "yes", "pass": True, "score": 0.9}
FAIL = {"reason": "no", "pass": False, "score": 0.1}


def by_criteria(verdicts: dict[str, dict[str, Any] | Fault]) -> Callable[[LLMRequest], Reply | Fault]:
    """Answer each voter by the rubric in its prompt."""

    def script(request: LLMRequest) -> Reply | Fault:
        for criteria, verdict in verdicts.items():
            if criteria in request.last_user_text:
                return verdict if isinstance(verdict, Fault) else answer(request, verdict)
        raise AssertionError(request.last_user_text)

    return script


def test_unanimous_by_default_passes_when_all_pass(run: Run) -> None:
    run.server.set_script(by_criteria({"accurate": PASS, "polite": PASS}))
    (result,) = run(lambda t: t.vote(["accurate", "polite"], models=[OPENAI, ANTHROPIC]))
    assert (result.state, result.score, result.threshold) == ("passed", 1.0, 1.0)
    assert result.name == "vote(['accurate', 'polite'], 4 of 4)"
    assert len(result.judge_calls) == 4 and len(run.server.requests) == 4
    assert {(r.provider, "accurate" in r.last_user_text) for r in run.server.requests} == {
        ("openai", True),
        ("openai", False),
        ("anthropic", True),
        ("anthropic", False),
    }
    assert result.reason.startswith("4 of 4 voters passed, 4 needed\n- openai/gpt-4o-mini on 'accurate': pass")


def test_unanimous_fails_on_one_dissent(run: Run) -> None:
    run.server.set_script(by_criteria({"accurate": PASS, "polite": FAIL}))
    (result,) = run(lambda t: t.vote(["accurate", "polite"]))
    assert (result.state, result.score) == ("failed", 0.5)
    assert "- openai/gpt-4o-mini on 'polite': fail (0.10): no" in result.reason
    assert [c.passed for c in result.judge_calls] == [True, False]


def test_k_of_n(run: Run) -> None:
    run.server.set_script(by_criteria({"one": PASS, "two": FAIL, "three": PASS}))
    results = run(lambda t: [t.vote(["one", "two", "three"], need=2), t.vote(["one", "two", "three"], need=3)])
    assert [(r.state, round(r.score or 0, 3), round(r.threshold, 3)) for r in results] == [
        ("passed", 0.667, 0.667),
        ("failed", 0.667, 1.0),
    ]


def test_a_voter_scoring_below_a_set_default_threshold_fails_its_vote(run: Run) -> None:
    run.settings = {"model": "openai/gpt-4o-mini", "default_threshold": 0.7}
    run.server.set_script(by_criteria({"one": {"reason": "meh", "pass": True, "score": 0.6}}))
    (result,) = run(lambda t: t.vote("one"))
    assert result.state == "failed"


def test_a_voter_that_says_pass_passes_with_any_score_when_no_threshold_is_set(run: Run) -> None:
    run.server.set_script(by_criteria({"one": {"reason": "meh", "pass": True, "score": 0.6}}))
    (result,) = run(lambda t: t.vote("one"))
    assert (result.state, result.score) == ("passed", 1.0)


@pytest.mark.parametrize(
    ("need", "other", "state"),
    [
        (2, PASS, "passed"),  # 2 passes reach 2 whatever the inconclusive voter says
        (3, PASS, "inconclusive"),  # the inconclusive voter decides it
        (2, FAIL, "inconclusive"),
        (3, FAIL, "failed"),  # even a pass from it would not make 3
    ],
)
def test_one_inconclusive_voter_matters_only_when_it_could_change_the_outcome(
    run: Run, need: int, other: dict[str, Any], state: str
) -> None:
    run.server.set_script(by_criteria({"one": PASS, "two": other, "three": Fault.server_error(500)}))
    (result,) = run(lambda t: t.vote(["one", "two", "three"], need=need))
    assert result.state == state
    assert "1 inconclusive" in result.reason and "inconclusive (provider_error)" in result.reason
    if state == "inconclusive":
        assert (result.cause, result.score) == ("provider_error", None)


def test_at_least_sets_the_fraction_of_voters_needed(run: Run) -> None:
    run.server.set_script(by_criteria({"one": PASS, "two": FAIL}))
    (result,) = run(lambda t: t.vote(["one", "two"]).at_least(0.5))
    assert (result.state, result.threshold) == ("passed", 0.5)


def test_grader_replaces_every_voting_model(run: Run) -> None:
    run.server.set_script(by_criteria({"one": PASS}))
    run.grader = ANTHROPIC
    (result,) = run(lambda t: t.vote("one", models=[OPENAI, "openai/gpt-5-mini"]))
    assert [c.model for c in result.judge_calls] == [ANTHROPIC, ANTHROPIC]
