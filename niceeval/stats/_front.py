"""Which setups no other beats on every measure at once (the Pareto front), claimed only where intervals say so.

Two setups are compared on the same cases, each measure (quality, cost, latency) as the interval of its change
(`Dimension`). One dominates the other when every measure is better beyond noise or unchanged, and at least one
is better: a measure whose interval reaches zero is not a tie, it is unknown, so no dominance is claimed through
it ("not separable", naming the measures within noise and, when every point estimate favours one side, that
side). The front is every setup that no other dominates: a setup leaves it only on evidence.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from ._verdict import Dimension

Relation = Literal["first dominates", "second dominates", "a trade-off", "not separable"]


@dataclass(frozen=True, kw_only=True)
class Dominance:
    """How two setups stand to each other over their shared cases, and the sentence that says it."""

    relation: Relation
    text: str
    """`b dominates a: better on cost (-50%, 95% CI -60% to -40%), p50 latency (...); unchanged: pass rate`."""


def dominance(first: str, second: str, dimensions: Sequence[Dimension]) -> Dominance:
    """How `second` stands to `first`, each of `dimensions` being the change from `first` to `second`."""
    if not dimensions:
        return Dominance(relation="not separable", text="not separable: no measure to weigh")
    better = [d for d in dimensions if d.direction == "better"]
    worse = [d for d in dimensions if d.direction == "worse"]
    noise = [d for d in dimensions if d.direction == "noise"]
    unchanged = [d.name for d in dimensions if d.direction == "unchanged"]
    same = f"; unchanged: {', '.join(unchanged)}" if unchanged else ""
    if better and worse:
        text = f"a trade-off: {second} better on {_listed(better)}; worse on {_listed(worse)}"
        return Dominance(relation="a trade-off", text=text + _within(noise) + same)
    if not noise and (better or worse):
        winner, loser, ahead = (second, first, better) if better else (first, second, worse)
        relation: Relation = "second dominates" if better else "first dominates"
        verb = "better" if better else "worse"
        text = f"{winner} dominates {loser}: {second} {verb} on {_listed(ahead)}{same}"
        return Dominance(relation=relation, text=text)
    leaning = _leaning(first, second, dimensions)
    parts = [f"{second} better on {_listed(better)}"] if better else []
    parts += [f"{second} worse on {_listed(worse)}"] if worse else []
    parts += [f"within noise: {', '.join(f'{d.name} ({d.shown})' for d in noise)}"] if noise else []
    parts += [f"unchanged: {', '.join(unchanged)}"] if unchanged else []
    return Dominance(relation="not separable", text="not separable: " + "; ".join(parts) + leaning)


def pareto_front(names: Sequence[str], dominated: Iterable[str]) -> list[str]:
    """`names` (in their order) less those some other setup dominates."""
    beaten = set(dominated)
    return [name for name in names if name not in beaten]


def _within(noise: Sequence[Dimension]) -> str:
    return f"; within noise: {', '.join(d.name for d in noise)}" if noise else ""


def _leaning(first: str, second: str, dimensions: Sequence[Dimension]) -> str:
    """`(second is ahead on every measure by its point estimate, not beyond noise)`, when it is; else nothing."""
    signs = {_ahead(d) for d in dimensions}
    if signs == {"second"}:
        return f" ({second} is ahead on every measure by its point estimate, not beyond noise)"
    if signs == {"first"}:
        return f" ({first} is ahead on every measure by its point estimate, not beyond noise)"
    return ""


def _ahead(dimension: Dimension) -> str:
    """Which side the change's point estimate favours: `second`, `first`, or `neither`."""
    if dimension.estimate is None or dimension.estimate == 0:
        return "neither"
    rises = dimension.estimate > 0
    return "first" if rises == (dimension.worse_when == "up") else "second"


def _listed(dimensions: Sequence[Dimension]) -> str:
    return ", ".join(f"{d.name} ({d.shown})" for d in dimensions)
