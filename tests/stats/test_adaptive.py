"""Adaptive repeats: the parsing of --runs and the rule that decides whether an eval runs again."""

from __future__ import annotations

import pytest

from niceeval.stats import AdaptiveRuns, parse_runs


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("5", 5),
        ("auto", AdaptiveRuns(least=3, most=20)),
        ("3..20", AdaptiveRuns(least=3, most=20)),
        ("4..4", AdaptiveRuns(least=4, most=4)),
    ],
)
def test_runs_are_a_number_auto_or_bounds(text: str, expected: int | AdaptiveRuns) -> None:
    assert parse_runs(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [("5..2", "1 <= LOW <= HIGH"), ("0", "at least 1"), ("many", "write a number of runs"), ("0..3", "1 <= LOW")],
)
def test_bad_runs_say_what_to_write(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_runs(text)


def test_an_eval_runs_at_least_the_lower_bound() -> None:
    policy = AdaptiveRuns(least=3, most=20)
    assert policy.wants_more(2, 2, gate=0.8)
    assert not policy.wants_more(0, 3, gate=0.8)  # 0/3: 0.00-0.56, clearly under the gate


def test_an_eval_repeats_while_its_interval_straddles_the_gate() -> None:
    policy = AdaptiveRuns(least=3, most=20)
    assert policy.wants_more(3, 3, gate=0.8)  # 3/3: 0.44-1.00 straddles 0.8
    assert policy.wants_more(10, 10, gate=0.8)  # 0.72-1.00: still
    assert not policy.wants_more(17, 17, gate=0.8)  # 0.82-1.00: settled above
    assert not policy.wants_more(10, 20, gate=0.8)  # the upper bound


def test_at_the_default_gate_one_miss_decides_the_eval() -> None:
    policy = AdaptiveRuns(least=3, most=20)
    assert not policy.wants_more(2, 3, gate=1.0) and not policy.wants_more(9, 10, gate=1.0)  # failed for good
    assert not policy.wants_more(3, 3, gate=0.0)  # nothing to settle: every eval passes a gate of 0


def test_at_the_default_gate_a_passing_eval_stops_once_its_failure_rate_is_under_the_tolerated_one() -> None:
    policy = AdaptiveRuns(least=3, most=20)
    assert policy.tolerated_flake_rate == 0.2
    # 15 of 15: the failure rate's upper bound is 0.204; 16 of 16: 0.194, under 0.2
    assert policy.wants_more(3, 3, gate=1.0) and policy.wants_more(15, 15, gate=1.0)
    assert not policy.wants_more(16, 16, gate=1.0)
    stricter = AdaptiveRuns(least=3, most=20, tolerated_flake_rate=0.25)
    assert stricter.wants_more(11, 11, gate=1.0) and not stricter.wants_more(12, 12, gate=1.0)


def test_the_tolerated_flake_rate_clears_passes_under_any_gate_above_it() -> None:
    policy = AdaptiveRuns(least=3, most=20)
    assert not policy.wants_more(16, 16, gate=0.95)  # 0.81-1.00: shown to fail less than 1 run in 5
    assert policy.wants_more(16, 17, gate=0.95)  # 0.73-0.99: neither side yet
    assert policy.wants_more(10, 10, gate=0.8) and not policy.wants_more(16, 16, gate=0.8)  # the gate itself


def test_no_tolerated_flake_rate_repeats_passing_evals_to_the_bound() -> None:
    policy = AdaptiveRuns(least=3, most=20, tolerated_flake_rate=0.0)
    assert policy.wants_more(19, 19, gate=1.0)  # only more runs find a flake
    assert not policy.wants_more(20, 20, gate=1.0)  # the upper bound


@pytest.mark.parametrize("rate", [-0.1, 1.0])
def test_a_tolerated_flake_rate_outside_zero_to_one_is_refused(rate: float) -> None:
    with pytest.raises(ValueError, match="tolerated flake rate must be at least 0 and under 1"):
        AdaptiveRuns(least=3, most=20, tolerated_flake_rate=rate)


def test_a_rule_that_never_clears_a_passing_eval_at_the_default_gate_is_gone() -> None:
    """Issue 41: at gate 1.0 every passing eval ran to HIGH, so the runs saved all came from failing evals."""
    policy = AdaptiveRuns(least=3, most=20)
    runs_of_a_passing_eval = next(n for n in range(3, 21) if not policy.wants_more(n, n, gate=1.0))
    runs_of_a_failing_eval = next(n for n in range(3, 21) if not policy.wants_more(0, n, gate=1.0))
    assert (runs_of_a_passing_eval, runs_of_a_failing_eval) == (16, 3)
