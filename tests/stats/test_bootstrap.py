"""The paired cluster bootstrap: point estimates as the reports compute them, intervals that cover, seeded."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from niceeval._core.summary import percentile
from niceeval.stats import PairedResampler


def test_a_ratio_of_sums_and_its_change() -> None:
    change = PairedResampler(6).ratio(
        ([1.0, 2.0, 3.0, 1.0, 2.0, 3.0], [1, 2, 1, 1, 2, 1]), ([2.0, 4.0, 6.0, 2.0, 4.0, 6.0], [1, 2, 1, 1, 2, 1])
    )
    assert (change.before, change.after) == pytest.approx((12 / 8, 24 / 8))
    assert change.difference == pytest.approx(1.5)
    assert (change.relative, change.relative_low, change.relative_high) == pytest.approx((1.0, 1.0, 1.0))
    assert change.low is not None and change.high is not None and change.low < 1.5 < change.high


def test_quantiles_are_the_reports_percentiles_of_every_value_pooled() -> None:
    rng = np.random.default_rng(3)
    before = [list(rng.lognormal(0, 0.5, int(rng.integers(1, 4)))) for _ in range(40)]
    after = [list(rng.lognormal(0.2, 0.5, int(rng.integers(1, 4)))) for _ in range(40)]
    p50, p95 = PairedResampler(40).quantiles(before, after, (0.5, 0.95))
    pooled_before, pooled_after = [v for g in before for v in g], [v for g in after for v in g]
    assert (p50.before, p50.after) == (percentile(pooled_before, 0.5), percentile(pooled_after, 0.5))
    assert (p95.before, p95.after) == (percentile(pooled_before, 0.95), percentile(pooled_after, 0.95))


def test_a_resampled_quantile_counts_a_case_drawn_twice_twice() -> None:
    """Each resample's quantile is the percentile of the list its draws make: checked by redrawing it by hand."""
    from niceeval.stats._bootstrap import _weighted_quantiles

    rng = np.random.default_rng(5)
    groups = [list(rng.normal(size=int(rng.integers(1, 5)))) for _ in range(12)]
    values = np.concatenate([np.asarray(g) for g in groups])
    owner = np.repeat(np.arange(12), [len(g) for g in groups])
    order = np.argsort(values, kind="stable")
    draws = rng.integers(0, 3, size=(50, 12)).astype(np.int32)
    draws[:, 0] += 1  # no resample draws nothing
    found = _weighted_quantiles(values[order], draws[:, owner[order]], (0.1, 0.5, 0.95))
    for row, counts in enumerate(draws):
        drawn = [v for k, count in enumerate(counts) for _ in range(count) for v in groups[k]]
        expected = [percentile(drawn, q) for q in (0.1, 0.5, 0.95)]
        assert list(found[row]) == pytest.approx(expected, abs=1e-12)


def test_the_same_data_gives_the_same_interval() -> None:
    rng = np.random.default_rng(1)
    costs = (list(rng.uniform(size=20)), [1] * 20)
    doubled = ([2 * c + rng.normal(0, 0.1) for c in costs[0]], [1] * 20)
    first, second = PairedResampler(20, seed=4).ratio(costs, doubled), PairedResampler(20, seed=4).ratio(costs, doubled)
    assert first == second
    assert PairedResampler(20, seed=5).ratio(costs, doubled).low != first.low


@pytest.mark.parametrize(("clusters", "tail"), [(2, 0.0), (6, 0.002432), (30, 0.018754), (1000, 0.024804)])
def test_the_interval_widens_as_a_t_interval_does_for_few_cases(clusters: int, tail: float) -> None:
    """Hesterberg's expanded percentile interval: tails at Phi(-sqrt(K/(K-1)) t(0.975, K-1))."""
    from niceeval.stats._bootstrap import _expanded_tail

    reference = scipy_stats.norm.sf(np.sqrt(clusters / (clusters - 1)) * scipy_stats.t.ppf(0.975, clusters - 1))
    assert _expanded_tail(0.95, clusters) == pytest.approx(reference, abs=1e-9)
    assert _expanded_tail(0.95, clusters) == pytest.approx(tail, abs=1e-6)


def test_one_shared_case_has_no_interval() -> None:
    change = PairedResampler(1).ratio(([1.0], [1]), ([2.0], [1]))
    assert (change.relative, change.low, change.relative_low) == (1.0, None, None)
    assert change.note == "1 shared case: no spread to measure"


def test_a_ratio_some_resamples_cannot_divide_has_no_interval() -> None:
    change = PairedResampler(8).ratio(([1.0] * 8, [1, 0, 0, 0, 0, 0, 0, 0]), ([2.0] * 8, [1] * 8))
    assert (change.before, change.after, change.low) == (8.0, 2.0, None)
    assert change.note == "some resamples have nothing to divide by: no interval"


def test_intervals_cover_the_true_change_about_95_percent_of_the_time() -> None:
    """Seeded simulation: costs with no true change in their mean ratio, and latencies drawn alike on both sides."""
    rng = np.random.default_rng(7)
    covered_cost = covered_p50 = 0
    trials = 200
    for trial in range(trials):
        before = rng.lognormal(-7, 0.8, 20)
        after = before * rng.lognormal(0, 0.3, 20) / np.exp(0.045)  # E[after | before] = before
        resampler = PairedResampler(20, resamples=1000, seed=trial)
        cost = resampler.ratio((list(before), [1] * 20), (list(after), [1] * 20))
        assert cost.relative_low is not None and cost.relative_high is not None
        covered_cost += cost.relative_low <= 0 <= cost.relative_high
        turns = [[list(rng.lognormal(0, 0.5, 2)) for _ in range(20)] for _ in range(2)]
        (p50,) = resampler.quantiles(turns[0], turns[1], (0.5,))
        assert p50.low is not None and p50.high is not None
        covered_p50 += p50.low <= 0 <= p50.high
    assert 0.88 <= covered_cost / trials <= 0.99
    assert 0.9 <= covered_p50 / trials <= 1.0


def test_inputs_that_do_not_pair_are_refused() -> None:
    with pytest.raises(ValueError, match="give one per cluster"):
        PairedResampler(3).ratio(([1.0, 2.0], [1, 1]), ([1.0, 2.0, 3.0], [1, 1, 1]))
    with pytest.raises(ValueError, match="at least one value on each side"):
        PairedResampler(2).quantiles([[1.0], []], [[1.0], [2.0]], (0.5,))
    with pytest.raises(ValueError, match="at least one shared cluster"):
        PairedResampler(0)
