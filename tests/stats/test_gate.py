"""The gate between two runs, and the simulation that proves it: noise rarely fails it, real drops do."""

from __future__ import annotations

import numpy as np
import pytest

from niceeval.stats import compare_runs


def _run(rng: np.random.Generator, rates: np.ndarray, runs: int) -> dict[str, tuple[int, int]]:
    passes = rng.binomial(runs, rates)
    return {f"case-{i:03d}": (int(k), runs) for i, k in enumerate(passes)}


def test_same_agent_twice_fails_the_gate_at_most_five_percent_of_the_time() -> None:
    rng = np.random.default_rng(1800)
    rates = np.full(50, 0.8)
    failures = sum(
        compare_runs(_run(rng, rates, 3), _run(rng, rates, 3)).regressed for _ in range(200)
    )
    assert failures <= 10  # <= 5% of 200


def test_same_agent_with_single_runs_fails_at_most_five_percent_of_the_time() -> None:
    rng = np.random.default_rng(1801)
    rates = rng.uniform(0.5, 1.0, size=50)  # cases differ in difficulty; one run each: McNemar
    failures = sum(
        compare_runs(_run(rng, rates, 1), _run(rng, rates, 1)).regressed for _ in range(200)
    )
    assert failures <= 10


def test_a_true_drop_from_0_9_to_0_6_is_caught_at_least_80_percent_of_the_time() -> None:
    rng = np.random.default_rng(1802)
    caught = sum(
        compare_runs(_run(rng, np.full(50, 0.9), 3), _run(rng, np.full(50, 0.6), 3)).regressed
        for _ in range(200)
    )
    assert caught >= 160


def test_a_drop_on_many_runs_of_one_eval_is_a_regression_of_that_eval() -> None:
    before = {"stable": (10, 10), "broken": (20, 20)}
    after = {"stable": (10, 10), "broken": (5, 20)}
    result = compare_runs(before, after)
    assert [c.eval_id for c in result.regressions] == ["broken"]
    assert result.evals[0].eval_id == "broken"  # sorted by evidence
    assert result.evals[1].change == "unchanged"
    assert result.regressed and result.reasons[0].startswith("broken: -0.75")


def test_one_flip_in_three_runs_is_noise_with_its_numbers() -> None:
    before = {f"e{i}": (3, 3) for i in range(3)}
    after = {**before, "e1": (2, 3)}
    result = compare_runs(before, after)
    assert [c.eval_id for c in result.noise] == ["e1"]
    assert result.noise[0].comparison.note == "3 vs 3 runs: not enough to tell"
    assert result.suite.note == "3 shared cases: not enough to tell"
    assert not result.regressed and result.reasons == []


def test_max_drop_fails_the_gate_on_a_large_drop_without_significance() -> None:
    before = {f"e{i}": (1, 1) for i in range(4)}
    after = {"e0": (0, 1), "e1": (0, 1), "e2": (1, 1), "e3": (1, 1)}
    assert not compare_runs(before, after).regressed
    gated = compare_runs(before, after, max_drop=0.2)
    assert gated.reasons == ["suite pass rate dropped by 0.500, more than --max-drop 0.2"]


def test_improvements_never_fail_the_gate() -> None:
    before = {f"e{i}": (0, 1) for i in range(30)}
    after = {f"e{i}": (1, 1) for i in range(30)}
    result = compare_runs(before, after)
    assert result.suite.significant and (result.suite.difference or 0) > 0
    assert not result.regressed


def test_clusters_make_the_suite_test_count_sources_not_cases() -> None:
    before = {f"doc{d}-q{q}": (1, 1) for d in range(3) for q in range(10)}
    after = {k: ((0, 1) if k.startswith("doc0") else (1, 1)) for k in before}
    unclustered = compare_runs(before, after)
    clustered = compare_runs(before, after, clusters={k: k.split("-")[0] for k in before})
    assert unclustered.suite.regression
    assert clustered.suite.n == 3 and clustered.suite.note == "3 shared cases: not enough to tell"


def test_runs_with_no_eval_in_common_cannot_be_compared() -> None:
    with pytest.raises(ValueError, match="share no eval"):
        compare_runs({"a": (1, 1)}, {"b": (1, 1)})
    with pytest.raises(ValueError, match="share no eval"):
        compare_runs({"a": (0, 0)}, {"a": (1, 1)})  # every run of `a` was skipped before
