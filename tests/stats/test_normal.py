"""The normal approximation that replaces the paired bootstrap above `BOOTSTRAP_CLUSTERS` shared clusters: it
agrees with the bootstrap at the switch size, and `compare_usage` / `estimate_usage` switch to it there."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from niceeval.stats import CaseUsage, compare_usage, estimate_usage
from niceeval.stats._bootstrap import PairedResampler
from niceeval.stats._normal import BOOTSTRAP_CLUSTERS, NormalPaired

TOLERANCE = 0.1
"""Each bound of the normal interval lies within this share of the bootstrap interval's width of the bootstrap's
bound (measured: at most 0.05 on the seeded data below; the bootstrap's own Monte Carlo error is about 0.03)."""


def _seeded(clusters: int) -> tuple[list[float], list[float], list[float], list[list[float]], list[list[float]]]:
    rng = np.random.default_rng(7)
    runs = rng.integers(1, 4, clusters).astype(float)
    cost_b = rng.lognormal(-6, 0.5, clusters) * runs
    cost_a = cost_b * rng.lognormal(0.1, 0.2, clusters)
    turns_b = [list(rng.lognormal(0, 0.4, int(n))) for n in rng.integers(1, 4, clusters)]
    turns_a = [[x * rng.lognormal(0.05, 0.1) for x in group] for group in turns_b]
    return list(runs), list(cost_b), list(cost_a), turns_b, turns_a


def _close(normal: tuple[float | None, float | None], boot: tuple[float | None, float | None]) -> None:
    assert None not in normal and None not in boot
    low, high = boot
    width = high - low
    assert abs(normal[0] - low) <= TOLERANCE * width
    assert abs(normal[1] - high) <= TOLERANCE * width


@pytest.fixture(scope="module")
def both() -> dict[str, tuple[Any, Any]]:
    """Every measure at the switch size: (by the bootstrap, by the normal approximation)."""
    runs, cost_b, cost_a, turns_b, turns_a = _seeded(BOOTSTRAP_CLUSTERS)
    measured = []
    for method in (PairedResampler(BOOTSTRAP_CLUSTERS), NormalPaired(BOOTSTRAP_CLUSTERS)):
        p50, p95 = method.quantiles(turns_b, turns_a, (0.5, 0.95))
        p50_of, p95_of = method.quantiles_of(turns_b, (0.5, 0.95))
        ratio, ratio_of = method.ratio((cost_b, runs), (cost_a, runs)), method.ratio_of((cost_b, runs))
        measured.append({"ratio": ratio, "p50": p50, "p95": p95, "ratio_of": ratio_of, "p50_of": p50_of,
                         "p95_of": p95_of})  # fmt: skip
    return {name: (measured[0][name], measured[1][name]) for name in measured[0]}


@pytest.mark.parametrize("measure", ["ratio", "p50", "p95"])
def test_paired_changes_agree_with_the_bootstrap_at_the_switch_size(
    both: dict[str, tuple[Any, Any]], measure: str
) -> None:
    boot, normal = both[measure]
    assert normal.difference == pytest.approx(boot.difference)
    assert normal.method == "normal approximation" and boot.method == "paired bootstrap"
    assert normal.resamples == 0 and boot.resamples == 2000
    _close((normal.low, normal.high), (boot.low, boot.high))
    _close((normal.relative_low, normal.relative_high), (boot.relative_low, boot.relative_high))


@pytest.mark.parametrize("measure", ["ratio_of", "p50_of", "p95_of"])
def test_one_side_estimates_agree_with_the_bootstrap_at_the_switch_size(
    both: dict[str, tuple[Any, Any]], measure: str
) -> None:
    boot, normal = both[measure]
    assert normal.value == pytest.approx(boot.value)
    _close((normal.low, normal.high), (boot.low, boot.high))
    assert normal.note == f"normal approximation over {BOOTSTRAP_CLUSTERS:,} clusters"


def _cases(count: int) -> tuple[dict[str, CaseUsage], dict[str, CaseUsage]]:
    runs, cost_b, cost_a, turns_b, turns_a = _seeded(count)
    before = {
        f"c{i}": CaseUsage(runs=int(runs[i]), passed=1, cost=cost_b[i], latencies=tuple(turns_b[i]))
        for i in range(count)
    }
    after = {
        f"c{i}": CaseUsage(runs=int(runs[i]), passed=1, cost=cost_a[i], latencies=tuple(turns_a[i]))
        for i in range(count)
    }
    return before, after


def test_compare_usage_bootstraps_up_to_the_switch_size_and_approximates_above() -> None:
    before, after = _cases(BOOTSTRAP_CLUSTERS + 1)
    above = compare_usage(before, after)
    assert above.cost_per_run is not None and above.latency_p95 is not None
    assert above.cost_per_run.method == above.latency_p95.method == "normal approximation"
    assert above.cost_per_run.resamples == 0
    assert above.cost_per_run.low is not None and above.cost_per_run.low > 0  # the seeded cost rose by ~10%
    small_before, small_after = _cases(200)
    below = compare_usage(small_before, small_after)
    assert below.cost_per_run is not None and below.cost_per_run.method == "paired bootstrap"
    assert below.cost_per_run.resamples == 2000


def test_estimate_usage_says_when_it_approximates() -> None:
    before, _ = _cases(BOOTSTRAP_CLUSTERS + 1)
    estimate = estimate_usage(before)
    assert estimate.notes == (f"intervals by normal approximation over {BOOTSTRAP_CLUSTERS + 1:,} clusters "
                              f"(a bootstrap up to {BOOTSTRAP_CLUSTERS:,})",)  # fmt: skip
    assert estimate.cost_per_run is not None and estimate.cost_per_run.has_interval
    small, _ = _cases(50)
    assert estimate_usage(small).notes == ()


def test_normal_approximation_refuses_what_it_cannot_measure() -> None:
    with pytest.raises(ValueError, match="at least two clusters"):
        NormalPaired(1)
    with pytest.raises(ValueError, match="confidence"):
        NormalPaired(10, confidence=1.5)
    normal = NormalPaired(3)
    with pytest.raises(ValueError, match="give one per cluster"):
        normal.ratio(([1.0, 2.0], [1.0, 1.0]), ([1.0, 2.0, 3.0], [1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="between 0 and 1"):
        normal.quantiles([[1.0]] * 3, [[1.0]] * 3, (1.5,))
    with pytest.raises(ValueError, match="at least one value"):
        normal.quantiles_of([[1.0], [], [2.0]], (0.5,))
    nothing = normal.ratio(([1.0, 2.0, 3.0], [0.0, 0.0, 0.0]), ([1.0, 2.0, 3.0], [1.0, 1.0, 1.0]))
    assert nothing.difference is None and nothing.note == "nothing to divide by"
    zero = normal.ratio(([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]), ([0.0, 1.0, 0.0], [1.0, 1.0, 1.0]))
    assert zero.before == 0.0 and zero.relative is None and zero.relative_low is None
    assert zero.low is not None and zero.low < zero.difference < zero.high


def test_diff_names_the_method_of_each_cost_and_latency_change() -> None:
    from niceeval.store._costs import UsageLimits, weigh_usage

    before, after = _cases(BOOTSTRAP_CLUSTERS + 1)
    large = weigh_usage(before, after, clusters=None, limits=UsageLimits())
    assert {change.measure: change.method for change in large.changes} == dict.fromkeys(
        ("cost per eval run", "cost per passed run", "p50 latency", "p95 latency"), "normal approximation"
    )
    assert large.changes[0].model_dump()["method"] == "normal approximation"  # in `niceeval diff --json` too
    small = weigh_usage(*_cases(40), clusters=None, limits=UsageLimits())
    assert {change.method for change in small.changes} == {"paired bootstrap"}
