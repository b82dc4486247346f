"""`samples=K`: the judge is asked K times on the same output; the score is their mean, an unsettled verdict is
`unstable`, each sample has its own cache entry, and inconclusive samples drop out."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from judge_helpers import OPENAI, RUBRIC_PASS, Run, always, answer

from niceeval._core.errors import UsageError
from niceeval.judge._cache import JudgeCache
from niceeval.testing import Fault, LLMRequest, Reply


def scores(values: Iterable[float], *, passed: bool = True) -> Callable[[LLMRequest], Reply | Fault]:
    """A script giving the next score of `values` to each ask, in the order the asks arrive."""
    upcoming = itertools.cycle(values)
    return lambda request: answer(request, {"reason": "graded", "pass": passed, "score": next(upcoming)})


def test_the_score_is_the_mean_of_the_samples(run: Run) -> None:
    run.server.set_script(scores([0.9, 0.8, 1.0]))
    (result,) = run(lambda t: t.rubric("Is it polite?", samples=3).at_least(0.5))
    assert len(run.server.requests) == 3
    assert result.score == pytest.approx(0.9)
    assert sorted(call.score for call in result.judge_calls if call.score is not None) == [0.8, 0.9, 1.0]
    assert (result.state, result.unstable) == ("passed", False)
    assert "mean 0.90 (sd 0.10) of 3 of 3 samples, 95% 0.65-1.00" in result.reason


def test_samples_straddling_the_threshold_are_unstable(run: Run) -> None:
    run.server.set_script(scores([0.72, 0.68, 0.74]))
    (result,) = run(lambda t: t.rubric("Is it polite?", samples=3).at_least(0.7))
    assert result.score == pytest.approx(0.7133, abs=1e-4)
    assert (result.state, result.unstable) == ("passed", True)
    assert "unstable: the interval straddles the threshold" in result.reason
    assert len(result.judge_calls) == 3


def test_pass_flags_that_disagree_are_unstable_and_the_majority_decides(run: Run) -> None:
    flags = itertools.cycle([True, False, False])

    def script(request: LLMRequest) -> Reply:
        return answer(request, {"reason": "graded", "pass": next(flags), "score": 0.9})

    run.server.set_script(script)
    (result,) = run(lambda t: t.rubric("Is it polite?", samples=3))
    assert (result.state, result.unstable) == ("failed", True)
    assert "1 passed; unstable: the samples disagree" in result.reason


def test_samples_that_agree_on_a_score_only_judge_are_stable(run: Run) -> None:
    run.server.set_script(always({"reason": "no", "choice": "no"}))
    (result,) = run(lambda t: t.autoevals.closed_qa("Is it polite?", samples=2))
    assert (result.state, result.score, result.unstable) == ("failed", 0.0, False)
    assert len(run.server.requests) == 2


def test_inconclusive_samples_drop_out_and_the_rest_count(run: Run) -> None:
    asks = itertools.count()

    def script(request: LLMRequest) -> Reply | Fault:
        if next(asks) == 0:
            return Fault.unauthorized()
        return answer(request, {"reason": "graded", "pass": True, "score": 0.8})

    run.server.set_script(script)
    (result,) = run(lambda t: t.rubric("Is it polite?", samples=3).at_least(0.5))
    assert (result.state, result.score) == ("passed", pytest.approx(0.8))
    assert "of 2 of 3 samples" in result.reason and "inconclusive (provider_error)" in result.reason
    assert [call.cause for call in result.judge_calls].count("provider_error") == 1


def test_all_samples_inconclusive_is_inconclusive(run: Run) -> None:
    run.keys = {}
    (result,) = run(lambda t: t.rubric("Is it polite?", samples=3))
    assert (result.state, result.score, result.cause) == ("inconclusive", None, "no_api_key")
    assert result.reason.startswith("all 3 samples inconclusive")
    assert len(result.judge_calls) == 3 and run.server.requests == []


def test_each_sample_is_cached_on_its_own_so_a_repeat_is_free(run: Run, cache: JudgeCache) -> None:
    run.server.set_script(scores([0.6, 0.9]))
    run.cache = cache
    (first,) = run(lambda t: t.rubric("Is it polite?", samples=2))
    (again,) = run(lambda t: t.rubric("Is it polite?", samples=2))
    assert len(run.server.requests) == 2 and len(cache) == 2
    assert [call.cached for call in again.judge_calls] == [True, True]
    assert again.score == pytest.approx(first.score) == pytest.approx(0.75)
    (one,) = run(lambda t: t.rubric("Is it polite?"))  # the first sample's entry is an unsampled call's
    assert one.judge_calls[0].cached and len(run.server.requests) == 2
    (three,) = run(lambda t: t.rubric("Is it polite?", samples=3))  # only the new sample is asked
    assert len(run.server.requests) == 3 and [c.cached for c in three.judge_calls].count(False) == 1


def test_settings_samples_apply_and_the_call_wins(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    run.settings = {"model": OPENAI, "samples": 3}
    run(lambda t: t.g_eval("Is it polite?"))  # g_eval's answers do not fit: each is inconclusive, still asked
    assert len(run.server.requests) == 6  # 3 samples, each with its repair turn
    (result,) = run(lambda t: t.rubric("Is it polite?", samples=1))
    assert len(run.server.requests) == 7 and result.reason == RUBRIC_PASS["reason"]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3"])
def test_samples_must_be_a_whole_number_of_asks(run: Run, bad: Any) -> None:
    with pytest.raises(UsageError, match=r"t\.judge\.rubric\(samples=\.\.\.\) must be a whole number"):
        run(lambda t: t.rubric("Is it polite?", samples=bad))
