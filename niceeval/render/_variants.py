"""The per-variant comparison every report ends with, collected run by run: pass rate, scores, cost, latency.

Assertions are grouped by kind, the name before its arguments (`includes('Paris')` -> `includes`), so the same
check over different cases lands in one column; a `.label()` is its own kind. Constant memory per variant. The
HTML report and the viewer's run page show the table (`for_page`); the console and the JSON report add each
rate's uncertainty (`niceeval.report`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from niceeval._core.assertion import assertion_kind
from niceeval._core.events import latencies
from niceeval._core.results import RunResult

MAX_KINDS = 8
"""Assertion kinds shown as columns, in the order they were first seen."""


@dataclass(kw_only=True, slots=True)
class VariantRow:
    """Running totals for one variant combination."""

    name: str
    runs: int = 0
    duration_s: float = 0.0
    cost: float | None = 0.0
    scores: dict[str, tuple[float, int]] = field(default_factory=dict)
    """Per assertion kind: (sum of scores, how many were scored)."""
    latencies: list[float] = field(default_factory=list)
    """Each turn's duration, over the variant's runs."""
    cases: dict[str, list[int]] = field(default_factory=dict)
    """Per case: [passed, scored, counted] runs, for the clustered standard error of the pass rate."""
    case_scores: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    """Per assertion kind, per case: [sum of scores, how many], for the standard error of each mean score."""

    def add(self, result: RunResult) -> None:
        self.runs += 1
        self.duration_s += result.duration_s
        self.latencies.extend(latencies(result.events))
        case = result.group or result.case_id or result.eval_id
        if result.outcome != "skipped":
            tally = self.cases.setdefault(case, [0, 0, 0])
            tally[0] += result.outcome == "passed"
            tally[1] += result.outcome == "scored"
            tally[2] += 1
        spent = result.agent_spend + result.judge_spend
        self.cost = None if self.cost is None or spent.cost is None else self.cost + spent.cost
        for assertion in result.assertions:
            if assertion.score is None:
                continue
            kind = assertion_kind(assertion.name)
            total, count = self.scores.get(kind, (0.0, 0))
            self.scores[kind] = (total + assertion.score, count + 1)
            per_case = self.case_scores.setdefault(kind, {}).setdefault(case, [0.0, 0.0])
            per_case[0] += assertion.score
            per_case[1] += 1

    def pass_rate(self, *, strict: bool) -> float | None:
        """The mean of the cases' pass rates (`scored` counts unless strict): each case weighs the same."""
        rates = [(passed + (0 if strict else scored)) / counted for passed, scored, counted in self.cases.values()]
        return sum(rates) / len(rates) if rates else None

    def mean_scores(self) -> dict[str, float]:
        return {kind: total / count for kind, (total, count) in self.scores.items()}

    @property
    def mean_duration_s(self) -> float:
        return self.duration_s / self.runs if self.runs else 0.0


class VariantTable:
    """Collects runs that have a variant; empty (and not shown) for suites without variants."""

    def __init__(self) -> None:
        self.rows: dict[str, VariantRow] = {}

    def add(self, result: RunResult) -> None:
        if result.variant is None:
            return
        name = ",".join(f"{key}={value}" for key, value in result.variant.items())
        row = self.rows.get(name)
        if row is None:
            row = self.rows[name] = VariantRow(name=name)
        row.add(result)

    def kinds(self) -> list[str]:
        """The assertion kinds shown as columns: up to `MAX_KINDS`, in the order they were first seen."""
        return list(dict.fromkeys(kind for row in self.rows.values() for kind in row.scores))[:MAX_KINDS]

    def for_page(self, *, strict: bool) -> dict[str, Any]:
        """The table as the HTML report and the viewer's run page show it (`variants_table` in `_macros.html`):
        up to eight assertion kinds as columns; no rows without variants."""
        kinds = self.kinds()
        return {
            "kinds": kinds,
            "rows": [
                {
                    "name": row.name,
                    "runs": row.runs,
                    "pass_rate": row.pass_rate(strict=strict),
                    "scores": [row.mean_scores().get(kind) for kind in kinds],
                    "cost": row.cost,
                    "mean_duration_s": row.mean_duration_s,
                }
                for row in self.rows.values()
            ],
        }
