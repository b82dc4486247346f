"""Power: the detectable drop is conservative (simulated power at it is at least the promised 80%)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from niceeval.stats import power


def _simulated_power(n: int, runs: int, rate: float, drop: float, repetitions: int = 400) -> float:
    rng = np.random.default_rng(31)
    before = rng.binomial(runs, rate, size=(repetitions, n)) / runs
    after = rng.binomial(runs, rate - drop, size=(repetitions, n)) / runs
    p_values = scipy_stats.ttest_rel(after, before, axis=1).pvalue
    return float(np.mean(p_values < 0.05))


def test_detectable_drop_is_detected_at_least_eighty_percent_of_the_time() -> None:
    result = power([0.9] * 50, 3)
    assert result.detectable_drop is not None and 0.1 < result.detectable_drop < 0.3
    assert _simulated_power(50, 3, 0.9, result.detectable_drop) >= 0.8
    assert _simulated_power(50, 3, 0.9, result.detectable_drop / 3) < 0.8


def test_more_runs_and_more_cases_detect_smaller_drops() -> None:
    rates = [0.6, 0.8, 1.0, 0.9] * 25
    base = power(rates, 3).detectable_drop or 0
    assert (power(rates, 10).detectable_drop or 0) < base
    assert (power(rates * 4, 3).detectable_drop or 0) < base


def test_one_run_per_case_takes_the_whole_variance() -> None:
    result = power([1.0, 0.0] * 20, 1)
    assert result.run_to_run_variance == pytest.approx(0.25)
    assert result.pass_rate == pytest.approx(0.5)


def test_cases_and_runs_needed_for_a_named_drop() -> None:
    result = power([0.8, 0.9, 0.7, 1.0] * 50, 3, detect=0.2)
    assert result.cases_needed is not None and result.runs_needed is not None
    at_cases = power([0.8, 0.9, 0.7, 1.0] * (result.cases_needed // 4 + 1), 3)
    at_runs = power([0.8, 0.9, 0.7, 1.0] * 50, result.runs_needed)
    assert (at_cases.detectable_drop or 1) <= 0.2 + 1e-9
    assert (at_runs.detectable_drop or 1) <= 0.2 + 1e-9


def test_runs_alone_cannot_reach_a_drop_too_small_for_the_cases() -> None:
    result = power([0.9] * 50, 3, detect=0.05)
    assert result.runs_needed is None and result.cases_needed is not None and result.cases_needed > 50
    assert result.note == f"more runs alone cannot detect a drop of 0.05: it needs {result.cases_needed} cases"


def test_no_cases_detect_nothing() -> None:
    result = power([], 3)
    assert result.detectable_drop is None and result.note == "no cases"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"alpha": 0.0}, "alpha and power"), ({"detect": 1.5}, "drop to detect"), ({"power": 1.0}, "alpha and power")],
)
def test_bad_parameters_are_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        power([0.5], 3, **kwargs)  # type: ignore[arg-type]


def test_zero_runs_are_refused() -> None:
    with pytest.raises(ValueError, match="runs per case must be at least 1"):
        power([0.5], 0)
