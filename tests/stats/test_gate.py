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
    failures = sum(compare_runs(_run(rng, rates, 3), _run(rng, rates, 3)).regressed for _ in range(200))
    assert failures <= 10  # <= 5% of 200


def test_same_agent_with_single_runs_fails_at_most_five_percent_of_the_time() -> None:
    rng = np.random.default_rng(1801)
    rates = rng.uniform(0.5, 1.0, size=50)  # cases differ in difficulty; one run each: McNemar
    failures = sum(compare_runs(_run(rng, rates, 1), _run(rng, rates, 1)).regressed for _ in range(200))
    assert failures <= 10


def test_a_true_drop_from_0_9_to_0_6_is_caught_at_least_80_percent_of_the_time() -> None:
    rng = np.random.default_rng(1802)
    caught = sum(
        compare_runs(_run(rng, np.full(50, 0.9), 3), _run(rng, np.full(50, 0.6), 3)).regressed for _ in range(200)
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


def _scored(rng: np.random.Generator, difficulty: np.ndarray, shift: float, runs: int) -> dict[str, float]:
    """Each case's mean score over its runs: the case's own level plus run-to-run noise (sd 0.1), within 0..1."""
    scores = np.clip(difficulty[:, None] + shift + rng.normal(0.0, 0.1, size=(len(difficulty), runs)), 0.0, 1.0)
    return {f"case-{i:03d}": float(s) for i, s in enumerate(scores.mean(axis=1))}


def _all_pass(cases: int, runs: int) -> dict[str, tuple[int, int]]:
    return {f"case-{i:03d}": (runs, runs) for i in range(cases)}


def test_an_unchanged_agent_fails_the_score_gate_at_most_five_percent_of_the_time() -> None:
    rng = np.random.default_rng(1803)
    failures = 0
    for _ in range(200):
        difficulty = rng.normal(0.8, 0.1, size=50)  # the same cases on both sides, each with its own level
        before = {"similarity": _scored(rng, difficulty, 0.0, 3)}
        after = {"similarity": _scored(rng, difficulty, 0.0, 3)}
        result = compare_runs(_all_pass(50, 3), _all_pass(50, 3), scores=(before, after))
        failures += result.regressed
    assert failures <= 10


def test_a_score_drop_from_0_8_to_0_7_is_caught_at_least_80_percent_of_the_time() -> None:
    rng = np.random.default_rng(1804)
    caught = 0
    for _ in range(200):  # 50 cases scored once each side, sd 0.1: no case shares its level across the runs
        before = {"rubric": _scored(rng, np.full(50, 0.8), 0.0, 1)}
        after = {"rubric": _scored(rng, np.full(50, 0.8), -0.1, 1)}
        result = compare_runs(_all_pass(50, 1), _all_pass(50, 1), scores=(before, after))
        caught += result.regressed and result.scores[0].change == "regression"
    assert caught >= 160


def test_a_score_test_is_scipys_paired_t_on_the_cases_mean_scores() -> None:
    from scipy.stats import ttest_rel

    rng = np.random.default_rng(7)
    old, new = rng.uniform(0.5, 1.0, 12), rng.uniform(0.4, 0.9, 12)
    before = {"judge": {f"c{i}": float(v) for i, v in enumerate(old)}, "only-before": {"c0": 1.0}}
    after = {"judge": {f"c{i}": float(v) for i, v in enumerate(new)}}
    result = compare_runs(_all_pass(12, 1), _all_pass(12, 1), scores=(before, after))
    (score,) = result.scores  # an assertion scored on one side only is not compared
    reference = ttest_rel(new, old)
    interval = reference.confidence_interval(0.95)
    assert score.assertion == "judge" and score.comparison.n == 12
    assert score.comparison.p_value == pytest.approx(reference.pvalue, rel=1e-9)
    assert score.comparison.difference == pytest.approx(float(np.mean(new - old)), rel=1e-12)
    assert (score.comparison.low, score.comparison.high) == pytest.approx((interval.low, interval.high), rel=1e-6)
    assert (score.before, score.after) == pytest.approx((float(old.mean()), float(new.mean())))


def test_score_tests_join_the_evals_false_discovery_family() -> None:
    from scipy.stats import false_discovery_control, fisher_exact, ttest_rel

    before = {f"e{i}": (20, 20) for i in range(8)}
    after = {**before, "e0": (10, 20)}
    old = [0.9, 0.8, 0.85, 0.9, 0.7, 0.95, 0.8, 0.9]
    new = [0.85, 0.7, 0.8, 0.9, 0.6, 0.9, 0.75, 0.8]
    scores = ({"judge": dict(zip(before, old, strict=True))}, {"judge": dict(zip(before, new, strict=True))})
    result = compare_runs(before, after, scores=scores)
    p_values = [fisher_exact([[20, 0], [20 - (10 if e == "e0" else 0), 10 if e == "e0" else 0]]).pvalue
                for e in sorted(before)] + [ttest_rel(new, old).pvalue]  # fmt: skip
    q_values = false_discovery_control(p_values, method="bh")
    assert result.scores[0].q_value == pytest.approx(q_values[-1])
    assert next(c for c in result.evals if c.eval_id == "e0").q_value == pytest.approx(q_values[0])
    assert result.scores[0].change == "regression"
    assert any(r.startswith("score judge: -0.06") for r in result.reasons)


def test_too_few_shared_cases_say_so_instead_of_a_p_value() -> None:
    scores = ({"judge": {"a": 0.9, "b": 0.9, "c": 0.8}}, {"judge": {"a": 0.2, "b": 0.3, "c": 0.1, "d": 0.5}})
    result = compare_runs({"a": (1, 1)}, {"a": (1, 1)}, scores=scores)
    (score,) = result.scores
    assert score.comparison.p_value is None and score.comparison.note == "3 shared cases: not enough to tell"
    assert score.change == "noise" and score.comparison.n == 3
    assert not result.regressed
    gated = compare_runs({"a": (1, 1)}, {"a": (1, 1)}, scores=scores, max_drop=0.5)
    assert gated.reasons == ["mean score judge dropped by 0.667, more than --max-drop 0.5"]


def test_a_score_move_within_noise_is_listed_with_its_numbers() -> None:
    old = {f"c{i}": 0.8 + (0.1 if i % 2 else -0.1) for i in range(10)}
    new = {c: v - (0.05 if i < 5 else -0.03) for i, (c, v) in enumerate(old.items())}
    result = compare_runs(_all_pass(10, 1), _all_pass(10, 1), scores=({"judge": old}, {"judge": new}))
    (score,) = result.scores
    assert score.change == "noise" and score.comparison.p_value is not None and score.comparison.p_value > 0.05
    assert str(score.comparison).startswith("-0.01 (95% ")
    assert not result.regressed


def test_score_improvements_never_fail_the_gate() -> None:
    old = {f"c{i}": 0.5 + i / 100 for i in range(20)}
    new = {c: v + 0.2 for c, v in old.items()}
    result = compare_runs(_all_pass(20, 1), _all_pass(20, 1), scores=({"judge": old}, {"judge": new}), max_drop=0.0)
    assert result.scores[0].change == "improvement" and not result.regressed


def test_evals_whose_rates_did_not_move_still_leave_a_change_possible() -> None:
    # three runs on each side, every eval 3/3 both times: the paired differences have no spread, so a t interval
    # has no width; the interval is the square and add of the two sides' intervals instead
    same = {f"e{i}": (3, 3) for i in range(11)}
    comparison = compare_runs(same, same)
    suite = comparison.suite
    assert (suite.test, suite.difference, suite.p_value, suite.unchanged) == ("paired t", 0.0, 1.0, True)
    before = comparison.before_rate
    assert before.low is not None and suite.low is not None and suite.high is not None
    assert suite.low == pytest.approx(-(1 - before.low)) and suite.high == pytest.approx(1 - before.low)
    assert -0.5 < suite.low < -0.05 and not comparison.regressed
    # rates that moved by different amounts keep the t interval
    moved = compare_runs(same, {f"e{i}": (3 - i % 2, 3) for i in range(11)})
    assert moved.suite.low is not None and moved.suite.high is not None and moved.suite.low < moved.suite.high < 0
    assert not moved.suite.unchanged
