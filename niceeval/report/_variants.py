"""The per-variant comparison every reporter ends with: pass rate, mean score per assertion, cost, latency.

Assertions are grouped by kind, the name before its arguments (`includes('Paris')` -> `includes`), so the same
check over different cases lands in one column; a `.label()` is its own kind. Constant memory per variant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from niceeval._core.assertion import assertion_kind
from niceeval._core.events import latencies
from niceeval._core.results import RunResult
from niceeval._core.summary import latency_text, percentile
from niceeval._core.wording import usd
from niceeval.report._uncertainty import as_json, rate_over_cases, weighted_mean_over_cases
from niceeval.stats import Estimate

_MAX_KINDS = 8


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
        return self.rate_estimate(strict=strict).value

    def mean_scores(self) -> dict[str, float]:
        return {kind: total / count for kind, (total, count) in self.scores.items()}

    def rate_estimate(self, *, strict: bool) -> Estimate:
        """The pass rate with a standard error clustered by case."""
        return rate_over_cases(
            (case, passed + (0 if strict else scored), counted)
            for case, (passed, scored, counted) in self.cases.items()
        )

    def score_estimates(self) -> dict[str, Estimate]:
        """Each assertion kind's mean score with a standard error clustered by case (a case's mean is its score)."""
        return {
            kind: weighted_mean_over_cases([(total, count) for total, count in cases.values()])
            for kind, cases in self.case_scores.items()
        }

    def as_dict(self, *, strict: bool) -> dict[str, Any]:
        return {
            "variant": self.name,
            "runs": self.runs,
            "pass_rate": self.pass_rate(strict=strict),
            "pass_rate_estimate": as_json(self.rate_estimate(strict=strict)),
            "mean_scores": {kind: round(score, 6) for kind, score in self.mean_scores().items()},
            "mean_score_estimates": {kind: as_json(e) for kind, e in self.score_estimates().items()},
            "cost": self.cost,
            "mean_duration_s": round(self.duration_s / self.runs, 6) if self.runs else 0.0,
            "latency_p50_s": percentile(self.latencies, 0.5),
            "latency_p95_s": percentile(self.latencies, 0.95),
        }


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

    def for_page(self, *, strict: bool) -> dict[str, Any]:
        """The table as the HTML report and the viewer's run page show it (`variants_table` in `_macros.html`):
        up to eight assertion kinds as columns; no rows without variants."""
        rows = list(self.rows.values())
        kinds = list(dict.fromkeys(kind for row in rows for kind in row.scores))[:_MAX_KINDS]
        return {
            "kinds": kinds,
            "rows": [
                {
                    "name": row.name,
                    "runs": row.runs,
                    "pass_rate": row.pass_rate(strict=strict),
                    "scores": [row.mean_scores().get(kind) for kind in kinds],
                    "cost": row.cost,
                    "mean_duration_s": row.duration_s / row.runs if row.runs else 0.0,
                }
                for row in rows
            ],
        }

    def as_list(self, *, strict: bool) -> list[dict[str, Any]]:
        return [row.as_dict(strict=strict) for row in self.rows.values()]

    def lines(self, *, strict: bool) -> list[str]:
        """The table as aligned plain-text lines (no lines when there were no variants)."""
        if not self.rows:
            return []
        kinds = list(dict.fromkeys(kind for row in self.rows.values() for kind in row.scores))[:_MAX_KINDS]
        turns = any(row.latencies for row in self.rows.values())
        header = ["variant", "runs", "pass rate", "95% CI", *kinds, "cost", "latency", *(["turns"] if turns else [])]
        body = [
            _cells(row, kinds, strict) + ([latency_text(row.latencies) or "-"] if turns else [])
            for row in self.rows.values()
        ]
        widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
        out = [
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
            for line in [header, *body]
        ]
        return ["Variants:", *(" " + line for line in out)]


def _cells(row: VariantRow, kinds: list[str], strict: bool) -> list[str]:
    means = row.score_estimates()
    cost = usd(row.cost)
    mean_s = row.duration_s / row.runs if row.runs else 0.0
    return [
        row.name,
        str(row.runs),
        *_rate_cells(row.rate_estimate(strict=strict)),
        *(_score_text(means[k]) if k in means else "-" for k in kinds),
        cost,
        f"{mean_s:.2f}s",
    ]


def _rate_cells(estimate: Estimate) -> list[str]:
    """The pass rate and its 95% interval over cases (`-` with fewer than two cases)."""
    if estimate.value is None:
        return ["n/a", "-"]
    if estimate.low is None or estimate.high is None:
        return [f"{estimate.value:.0%}", "-"]
    return [f"{estimate.value:.0%}", f"{estimate.low:.0%}-{estimate.high:.0%}"]


def _score_text(estimate: Estimate) -> str:
    """`0.80±0.03` (± the standard error over cases), or the bare mean with fewer than two cases."""
    if estimate.value is None:
        return "-"
    return f"{estimate.value:.2f}" if estimate.stderr is None else f"{estimate.value:.2f}±{estimate.stderr:.2f}"
