"""Dominance between two setups and the Pareto front: claimed only where every measure's interval says so."""

from __future__ import annotations

from typing import Literal

from niceeval.stats import Dimension, dominance, pareto_front


def measure(name: str, low: float | None, high: float | None, *, worse_when: Literal["up", "down"] = "up",
            estimate: float | None = None) -> Dimension:  # fmt: skip
    return Dimension(name=name, low=low, high=high, worse_when=worse_when, shown=f"{name} change", estimate=estimate)


def test_better_beyond_noise_on_every_measure_dominates() -> None:
    judged = dominance("a", "b", [measure("pass rate", 0.1, 0.3, worse_when="down"), measure("cost", -0.5, -0.2)])
    assert judged.relation == "second dominates"
    assert judged.text == "b dominates a: b better on pass rate (pass rate change), cost (cost change)"


def test_worse_beyond_noise_with_the_rest_unchanged_is_dominated() -> None:
    judged = dominance("a", "b", [measure("pass rate", 0.0, 0.0, worse_when="down"), measure("cost", 0.2, 0.5)])
    assert judged.relation == "first dominates"
    assert judged.text == "a dominates b: b worse on cost (cost change); unchanged: pass rate"


def test_better_on_one_and_worse_on_another_is_a_trade_off() -> None:
    judged = dominance("a", "b", [measure("cost", -0.5, -0.2), measure("p50 latency", 0.1, 0.2)])
    assert judged.relation == "a trade-off"
    assert judged.text == "a trade-off: b better on cost (cost change); worse on p50 latency (p50 latency change)"


def test_a_measure_within_noise_blocks_the_claim_and_is_named() -> None:
    judged = dominance("a", "b", [measure("pass rate", -0.1, 0.2, worse_when="down"), measure("cost", -0.5, -0.2)])
    assert judged.relation == "not separable"
    assert judged.text == "not separable: b better on cost (cost change); within noise: pass rate (pass rate change)"


def test_point_estimates_all_one_way_are_said_but_not_claimed() -> None:
    judged = dominance(
        "a", "b",
        [measure("pass rate", -0.1, 0.2, worse_when="down", estimate=0.05), measure("cost", -0.5, 0.1, estimate=-0.2)],
    )  # fmt: skip
    assert judged.relation == "not separable"
    assert judged.text.endswith("(b is ahead on every measure by its point estimate, not beyond noise)")
    backwards = dominance("a", "b", [measure("cost", -0.1, 0.5, estimate=0.2)])
    assert backwards.text.endswith("(a is ahead on every measure by its point estimate, not beyond noise)")


def test_setups_the_same_on_every_measure_are_not_separable() -> None:
    judged = dominance("a", "b", [measure("pass rate", 0.0, 0.0, worse_when="down"), measure("cost", 0.0, 0.0)])
    assert (judged.relation, judged.text) == ("not separable", "not separable: unchanged: pass rate, cost")


def test_nothing_to_weigh_is_not_separable() -> None:
    assert dominance("a", "b", []).text == "not separable: no measure to weigh"


def test_the_front_keeps_the_order_asked_less_the_dominated() -> None:
    assert pareto_front(["c", "a", "b"], ["a", "a"]) == ["c", "b"]
