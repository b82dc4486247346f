"""Intervals pinned to published values and checked against scipy and statsmodels on seeded random data."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats as scipy_stats
from statsmodels.stats.proportion import proportion_confint

from niceeval.stats import clustered_mean, clustered_mean_of_sums, clustered_rate, t_quantile, wilson


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [(8, 10, 0.490, 0.943), (10, 10, 0.722, 1.000), (0, 10, 0.000, 0.278), (1, 2, 0.095, 0.905)],
)
def test_wilson_matches_published_values(k: int, n: int, low: float, high: float) -> None:
    interval = wilson(k, n)
    assert interval.value == k / n
    assert (round(interval.low or -1, 3), round(interval.high or -1, 3)) == (low, high)
    assert interval.stderr is None and interval.note is None


def test_wilson_matches_statsmodels_on_random_counts() -> None:
    rng = np.random.default_rng(18)
    for _ in range(200):
        n = int(rng.integers(1, 500))
        k = int(rng.integers(0, n + 1))
        confidence = float(rng.choice([0.8, 0.9, 0.95, 0.99]))
        low, high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
        ours = wilson(k, n, confidence=confidence)
        assert ours.low == pytest.approx(low, abs=1e-12) and ours.high == pytest.approx(high, abs=1e-12)


def test_wilson_with_no_runs_has_no_rate() -> None:
    assert wilson(0, 0) == wilson(0, 0).__class__(value=None, note="no runs")
    assert str(wilson(0, 0)) == "no runs"


@pytest.mark.parametrize(("k", "n"), [(3, 2), (-1, 4)])
def test_wilson_refuses_impossible_counts(k: int, n: int) -> None:
    with pytest.raises(ValueError, match="0 <= k <= n"):
        wilson(k, n)


def test_confidence_outside_zero_one_is_refused() -> None:
    with pytest.raises(ValueError, match="confidence must be between 0 and 1"):
        wilson(1, 2, confidence=95)


def test_t_quantile_matches_scipy() -> None:
    for p in (0.025, 0.6, 0.9, 0.975, 0.995):
        for df in [*range(1, 120), 999, 1001, 5000]:
            assert t_quantile(p, df) == pytest.approx(scipy_stats.t.ppf(p, df), rel=1e-9), (p, df)


def test_t_quantile_refuses_impossible_arguments() -> None:
    with pytest.raises(ValueError, match="t quantile needs"):
        t_quantile(1.0, 3)


def test_unclustered_mean_is_the_usual_t_interval() -> None:
    rng = np.random.default_rng(7)
    values = rng.normal(0.7, 0.2, size=25)
    ours = clustered_mean(list(values))
    low, high = scipy_stats.t.interval(0.95, 24, loc=values.mean(), scale=scipy_stats.sem(values))
    assert ours.stderr == pytest.approx(scipy_stats.sem(values), rel=1e-12)
    assert (ours.low, ours.high) == (pytest.approx(low, rel=1e-3), pytest.approx(high, rel=1e-3))
    assert (ours.n, ours.clusters) == (25, 25)


def test_clustered_standard_error_matches_statsmodels_cluster_robust_ols() -> None:
    rng = np.random.default_rng(11)
    for _ in range(20):
        groups = rng.integers(0, 12, size=60)
        values = rng.normal(size=12)[groups] + rng.normal(size=60)  # shared difficulty per cluster
        fit = sm.OLS(values, np.ones(60)).fit(cov_type="cluster", cov_kwds={"groups": groups})
        ours = clustered_mean(list(values), list(groups))
        assert ours.value == pytest.approx(float(fit.params[0]))
        assert ours.stderr == pytest.approx(float(fit.bse[0]), rel=1e-9)
        assert ours.clusters == len(set(groups.tolist()))


def test_runs_of_one_case_are_not_independent_evidence() -> None:
    # 3 cases, each run 4 times with identical outcomes: 12 values, but only 3 independent cases
    values = [1.0] * 4 + [0.0] * 4 + [1.0] * 4
    as_runs = clustered_mean(values)
    as_cases = clustered_mean(values, [case for case in "abc" for _ in range(4)])
    assert as_cases.stderr is not None and as_runs.stderr is not None
    assert as_cases.stderr > 1.5 * as_runs.stderr
    assert as_cases.clusters == 3


def test_one_cluster_has_no_spread_to_measure() -> None:
    estimate = clustered_mean([1.0, 0.0, 1.0], ["case"] * 3)
    assert estimate.value == pytest.approx(2 / 3)
    assert (estimate.low, estimate.high, estimate.stderr) == (None, None, None)
    assert estimate.note == "1 case: no spread to measure"
    assert str(estimate) == "0.67 (1 case: no spread to measure)"


def test_bounds_clip_a_pass_rate_interval() -> None:
    estimate = clustered_mean([1, 0, 1, 1, 0, 1], [1, 1, 2, 2, 3, 3], bounds=(0.0, 1.0))
    assert estimate.low == 0.0 and estimate.high == 1.0
    unclipped = clustered_mean([1, 0, 1, 1, 0, 1], [1, 1, 2, 2, 3, 3])
    assert unclipped.low is not None and unclipped.low < 0


def test_mismatched_cluster_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="3 values but 2 cluster keys"):
        clustered_mean([1.0, 2.0, 3.0], ["a", "b"])


def test_empty_values_have_no_mean() -> None:
    assert clustered_mean([]).value is None


def test_intervals_and_power_do_not_import_scipy() -> None:
    code = (
        "import sys\n"
        "from niceeval.stats import wilson, clustered_mean, power\n"
        "wilson(8, 10); clustered_mean([1, 0, 1], [1, 1, 2]); power([0.9, 0.8], 3, detect=0.1)\n"
        "print('scipy' in sys.modules, 'numpy' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["False", "False"]


def test_clustered_mean_of_sums_is_clustered_mean() -> None:
    rng = np.random.default_rng(19)
    groups = rng.integers(0, 9, size=40)
    values = rng.random(40)
    sums = [(float(values[groups == g].sum()), float((groups == g).sum())) for g in sorted(set(groups.tolist()))]
    assert clustered_mean_of_sums(sums) == clustered_mean(list(values), list(groups))


def test_a_rate_where_every_case_passed_is_not_certain() -> None:
    rate = clustered_rate([(3, 3)] * 50)  # 50 cases, 3 of 3 runs each
    assert rate.value == 1.0 and rate.stderr == 0.0
    assert (round(rate.low or 0, 3), rate.high) == (0.929, 1.0)  # Wilson over the 50 cases
    assert rate.n == 150 and rate.clusters == 50 and rate.note is None


@pytest.mark.parametrize(("passing", "low", "high"), [(3, 0.188, 0.812), (5, 0.436, 0.970), (6, 0.610, 1.0)])
def test_one_run_per_case_is_wilson_over_the_cases_at_every_count(passing: int, low: float, high: float) -> None:
    """Issue 41: 3 of 6 was 0%-100% and 5 of 6 40%-100% (a clipped t interval), while 6 of 6 switched to Wilson."""
    rate = clustered_rate([(1, 1)] * passing + [(0, 1)] * (6 - passing))
    assert (round(rate.low or -1, 3), round(rate.high or -1, 3)) == (low, high)
    exact = wilson(passing, 6)
    assert rate.low == pytest.approx(exact.low, abs=1e-12) and rate.high == pytest.approx(exact.high, abs=1e-12)


def test_one_run_per_case_matches_statsmodels_wilson_at_every_size() -> None:
    rng = np.random.default_rng(41)
    for cases in (5, 9, 40, 500):
        passing = int(rng.integers(0, cases + 1))
        rate = clustered_rate([(1, 1)] * passing + [(0, 1)] * (cases - passing))
        low, high = proportion_confint(passing, cases, method="wilson")
        assert (rate.low, rate.high) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))


def test_every_case_weighs_the_same_however_many_runs_it_got() -> None:
    """Issue 41: two evals that passed 20 of 20 and one that passed 2 of 3 were 98% (42 of 43 runs); the mean of
    the three rates is 89%."""
    rate = clustered_rate([(20, 20), (20, 20), (2, 3)])
    assert rate.value == pytest.approx(8 / 9)
    assert rate.n == 43 and rate.clusters == 3


def test_runs_that_repeat_a_case_count_for_less_when_cases_differ() -> None:
    alike = clustered_rate([(3, 5)] * 20)  # every case passes 3 of 5: the runs look independent
    apart = clustered_rate([(5, 5)] * 12 + [(0, 5)] * 8)  # each case always passes or always fails
    assert alike.value == apart.value == 0.6
    over_runs, over_cases = wilson(60, 100), wilson(12, 20)
    assert alike.low == pytest.approx(over_runs.low) and alike.high == pytest.approx(over_runs.high)
    assert apart.low == pytest.approx(over_cases.low) and apart.high == pytest.approx(over_cases.high)


def test_cases_of_one_cluster_count_as_one_source() -> None:
    counts = [(1, 1), (1, 1), (0, 1), (0, 1)] * 5
    separate = clustered_rate(counts)
    documents = clustered_rate(counts, [i // 2 for i in range(20)])  # each pair of cases shares a document
    assert separate.value == documents.value == 0.5 and documents.clusters == 10
    assert documents.low is not None and separate.low is not None and documents.low < separate.low - 0.05


def test_one_case_or_one_cluster_has_no_spread_to_measure() -> None:
    assert clustered_rate([(8, 10)]).note == "1 case: no spread to measure"
    one = clustered_rate([(8, 10), (3, 10)], ["doc", "doc"])
    assert one.value == 0.55 and (one.low, one.high, one.stderr) == (None, None, None)
    assert one.note == "1 cluster: no spread to measure"


def test_a_rate_leaves_out_cases_without_runs_and_refuses_impossible_counts() -> None:
    assert clustered_rate([(0, 0), (0, 0)]).value is None
    assert clustered_rate([(1, 1), (0, 0), (0, 1)]).value == 0.5
    with pytest.raises(ValueError, match="0 <= passes <= runs, got 4 of 3"):
        clustered_rate([(4, 3), (1, 1)])
    with pytest.raises(ValueError, match="2 cases but 1 cluster keys"):
        clustered_rate([(1, 1), (0, 1)], ["a"])
