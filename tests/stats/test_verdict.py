"""The one-line verdict: a measure is better or worse only when its whole interval is on that side of zero."""

from __future__ import annotations

from niceeval.stats import Dimension, verdict


def cost(low: float | None, high: float | None) -> Dimension:
    return Dimension(name="cost", low=low, high=high, worse_when="up", shown=f"{low} to {high}")


def pass_rate(low: float | None, high: float | None) -> Dimension:
    return Dimension(name="pass rate", low=low, high=high, worse_when="down", shown=f"{low} to {high}")


def test_more_cost_beyond_noise_with_the_pass_rate_unchanged_is_worse() -> None:
    found = verdict([pass_rate(0.0, 0.0), cost(0.9, 1.1)])
    assert (found.kind, found.text) == ("worse", "worse on cost (0.9 to 1.1); unchanged: pass rate")


def test_a_gain_whose_interval_reaches_zero_is_not_claimed() -> None:
    found = verdict([pass_rate(0.0, 0.2), cost(-0.1, 0.05)])
    assert (found.kind, found.text) == ("within noise", "within noise: pass rate, cost")


def test_better_needs_an_interval_clear_of_zero_and_nothing_worse() -> None:
    found = verdict([pass_rate(0.05, 0.2), cost(-0.1, 0.05)])
    assert (found.kind, found.text) == ("better", "better on pass rate (0.05 to 0.2); within noise: cost")


def test_better_on_one_measure_and_worse_on_another_is_a_trade_off() -> None:
    found = verdict([pass_rate(0.05, 0.2), cost(0.5, 0.7)])
    assert found.kind == "a trade-off"
    assert found.text == "a trade-off: better on pass rate (0.05 to 0.2); worse on cost (0.5 to 0.7)"


def test_a_measure_without_an_interval_is_within_noise() -> None:
    assert cost(None, None).direction == "noise"
    assert verdict([]).text == "nothing to weigh"


def test_which_way_is_worse_follows_the_measure() -> None:
    assert (cost(-0.3, -0.1).direction, pass_rate(-0.3, -0.1).direction) == ("better", "worse")
