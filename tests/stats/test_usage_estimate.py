"""One setup's cost and latency on its own: each with the bootstrap interval over its cases, or a note saying why
there is none."""

from __future__ import annotations

import pytest

from niceeval.stats import CaseUsage, PairedResampler, estimate_usage


def case(cost: float | None, *, runs: int = 1, passed: int = 1, turns: tuple[float, ...] = ()) -> CaseUsage:
    return CaseUsage(runs=runs, passed=passed, cost=cost, latencies=turns)


def test_cost_per_run_is_a_ratio_of_sums_with_its_interval() -> None:
    usage = {f"q{i}": case(0.001 * (i + 1), runs=2, passed=i % 2) for i in range(8)}
    estimate = estimate_usage(usage)
    assert estimate.cost_per_run is not None and estimate.cost_per_pass is not None
    # $0.036 over 16 runs; over the 4 passed runs
    assert estimate.cost_per_run.value == pytest.approx(0.036 / 16)
    assert estimate.cost_per_pass.value == pytest.approx(0.036 / 4)
    low, high = estimate.cost_per_run.low, estimate.cost_per_run.high
    assert low is not None and high is not None and low < 0.036 / 16 < high
    assert (low, high) == pytest.approx((0.0013125, 0.0031875))  # seeded: the same every run


def test_latency_quantiles_pool_every_turn() -> None:
    usage = {f"q{i}": case(0.001, turns=(1.0 + i, 1.5 + i)) for i in range(5)}
    estimate = estimate_usage(usage)
    assert estimate.latency_p50 is not None and estimate.latency_p95 is not None
    assert estimate.latency_p50.value == pytest.approx(3.25)  # ten turns: between 3.0 and 3.5
    assert estimate.latency_p95.value == pytest.approx(5.275)
    assert estimate.latency_p50.low is not None and estimate.latency_p50.low < 3.25


def test_a_skipped_case_counts_for_nothing_and_an_untimed_one_is_named() -> None:
    usage = {"a": case(0.001, turns=(1.0,)), "b": case(0.001), "skipped": case(None, runs=0, passed=0)}
    estimate = estimate_usage(usage)
    assert (estimate.cases, estimate.unpriced) == (2, 0)
    assert estimate.notes == ("latency over the 1 of 2 cases with a measured turn",)
    assert estimate.latency_p50 is not None and estimate.latency_p50.note == "1 case: no spread to measure"


def test_an_unpriced_model_or_no_pass_leaves_the_cost_out_saying_why() -> None:
    unpriced = estimate_usage({"a": case(None), "b": case(0.1)})
    assert (unpriced.cost_per_run, unpriced.unpriced) == (None, 1)
    assert unpriced.notes[0] == "cost not estimated: 1 case(s) called a model with no price (set pricing=)"
    none_passed = estimate_usage({"a": case(0.1, passed=0), "b": case(0.1, passed=0)})
    assert none_passed.cost_per_pass is None
    assert "cost per passed run not estimated: no run passed" in none_passed.notes


def test_no_counted_run_has_nothing_to_estimate() -> None:
    estimate = estimate_usage({"a": case(0.1, runs=0, passed=0)})
    assert (estimate.cases, estimate.cost_per_run, estimate.notes) == (0, None, ("no counted run",))


def test_a_ratio_some_resamples_cannot_divide_has_no_interval() -> None:
    resampler = PairedResampler(3, seed=0)
    assert resampler.ratio_of(([1.0, 1.0, 1.0], [0.0, 0.0, 0.0])).note == "nothing to divide by"
    sparse = resampler.ratio_of(([1.0, 1.0, 1.0], [1.0, 0.0, 0.0]))
    assert (sparse.value, sparse.low, sparse.note) == (
        3.0,
        None,
        "some resamples have nothing to divide by: no interval",
    )


def test_one_sides_quantiles_refuse_bad_input() -> None:
    resampler = PairedResampler(2, seed=0)
    with pytest.raises(ValueError, match="a quantile is between 0 and 1"):
        resampler.quantiles_of([[1.0], [2.0]], (1.5,))
    with pytest.raises(ValueError, match="every cluster needs at least one value"):
        resampler.quantiles_of([[1.0], []], (0.5,))
