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


def test_at_the_default_gate_of_one_passes_repeat_and_a_failure_settles() -> None:
    policy = AdaptiveRuns(least=3, most=20)
    assert policy.wants_more(3, 3, gate=1.0) and policy.wants_more(19, 19, gate=1.0)  # only more runs find a flake
    assert not policy.wants_more(20, 20, gate=1.0)  # the upper bound
    assert not policy.wants_more(2, 3, gate=1.0) and not policy.wants_more(9, 10, gate=1.0)  # failed for good
    assert not policy.wants_more(3, 3, gate=0.0)  # nothing to settle: every eval passes a gate of 0
