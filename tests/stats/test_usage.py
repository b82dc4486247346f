"""Cost and latency of the shared cases on each side: what is compared, pooled and left out, and why."""

from __future__ import annotations

import pytest

from niceeval.stats import CaseUsage, compare_usage


def case(cost: float | None, *, runs: int = 1, passed: int = 1, turns: tuple[float, ...] = ()) -> CaseUsage:
    return CaseUsage(runs=runs, passed=passed, cost=cost, latencies=turns)


def test_cost_per_run_and_per_passed_run_over_the_shared_cases() -> None:
    before = {"a": case(0.002, runs=2, passed=2), "b": case(0.001, passed=0), "gone": case(9.0)}
    after = {"a": case(0.004, runs=2, passed=1), "b": case(0.002), "new": case(9.0)}
    compared = compare_usage(before, after)
    assert (compared.cases, compared.clusters) == (2, 2)
    assert compared.cost_per_run is not None and compared.cost_per_pass is not None
    assert (compared.cost_per_run.before, compared.cost_per_run.after) == pytest.approx((0.001, 0.002))
    assert (compared.cost_per_pass.before, compared.cost_per_pass.after) == pytest.approx((0.0015, 0.003))


def test_cases_of_one_cluster_are_resampled_together() -> None:
    before = {f"q{i}": case(0.001, turns=(1.0,)) for i in range(6)}
    after = {f"q{i}": case(0.002, turns=(2.0,)) for i in range(6)}
    compared = compare_usage(before, after, clusters={f"q{i}": f"doc{i // 3}" for i in range(6)})
    assert (compared.cases, compared.clusters) == (6, 2)
    assert compared.latency_p50 is not None and compared.latency_p50.clusters == 2


def test_an_unpriced_model_leaves_cost_out_and_says_so() -> None:
    compared = compare_usage({"a": case(None), "b": case(0.1)}, {"a": case(0.1), "b": case(0.1)})
    assert (compared.cost_per_run, compared.cost_per_pass, compared.unpriced) == (None, None, 1)
    assert compared.notes[0] == "cost not compared: 1 shared case(s) called a model with no price (set pricing=)"


def test_an_agent_that_spent_nothing_has_no_cost_to_compare() -> None:
    compared = compare_usage({"a": case(0.0)}, {"a": case(0.0)})
    assert compared.cost_per_run is None
    assert "cost not compared: the agent spent nothing on either side" in compared.notes
    assert "no turn latency measured on both sides of any shared case" in compared.notes


def test_latency_is_compared_over_the_cases_timed_on_both_sides() -> None:
    before = {"a": case(0.1, turns=(1.0, 3.0)), "b": case(0.1, turns=(2.0,)), "c": case(0.1)}
    after = {"a": case(0.1, turns=(2.0, 6.0)), "b": case(0.1), "c": case(0.1, turns=(5.0,))}
    compared = compare_usage(before, after)
    assert compared.latency_p50 is not None
    assert (compared.latency_p50.before, compared.latency_p50.after, compared.latency_p50.clusters) == (2.0, 4.0, 1)
    assert "latency over the 1 of 3 shared cases with a measured turn on both sides" in compared.notes


def test_no_passed_run_on_one_side_leaves_out_cost_per_passed_run() -> None:
    compared = compare_usage({"a": case(0.1, passed=0)}, {"a": case(0.1)})
    assert compared.cost_per_run is not None and compared.cost_per_pass is None
    assert "cost per passed run not compared: no run passed on one side" in compared.notes
