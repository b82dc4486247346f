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

_MAX_KINDS = 8


@dataclass(kw_only=True, slots=True)
class VariantRow:
    """Running totals for one variant combination."""

    name: str
    runs: int = 0
    counted: int = 0
    passed: int = 0
    scored: int = 0
    duration_s: float = 0.0
    cost: float | None = 0.0
    scores: dict[str, tuple[float, int]] = field(default_factory=dict)
    """Per assertion kind: (sum of scores, how many were scored)."""
    latencies: list[float] = field(default_factory=list)
    """Each turn's duration, over the variant's runs."""

    def add(self, result: RunResult) -> None:
        self.runs += 1
        self.duration_s += result.duration_s
        self.latencies.extend(latencies(result.events))
        if result.outcome != "skipped":
            self.counted += 1
            self.passed += result.outcome == "passed"
            self.scored += result.outcome == "scored"
        spent = result.agent_spend + result.judge_spend
        self.cost = None if self.cost is None or spent.cost is None else self.cost + spent.cost
        for assertion in result.assertions:
            if assertion.score is None:
                continue
            kind = assertion_kind(assertion.name)
            total, count = self.scores.get(kind, (0.0, 0))
            self.scores[kind] = (total + assertion.score, count + 1)

    def pass_rate(self, *, strict: bool) -> float | None:
        """Share of non-skipped runs that passed (`scored` counts unless strict)."""
        ok = self.passed + (0 if strict else self.scored)
        return ok / self.counted if self.counted else None

    def mean_scores(self) -> dict[str, float]:
        return {kind: total / count for kind, (total, count) in self.scores.items()}

    def as_dict(self, *, strict: bool) -> dict[str, Any]:
        return {
            "variant": self.name,
            "runs": self.runs,
            "pass_rate": self.pass_rate(strict=strict),
            "mean_scores": {kind: round(score, 6) for kind, score in self.mean_scores().items()},
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

    def as_list(self, *, strict: bool) -> list[dict[str, Any]]:
        return [row.as_dict(strict=strict) for row in self.rows.values()]

    def lines(self, *, strict: bool) -> list[str]:
        """The table as aligned plain-text lines (no lines when there were no variants)."""
        if not self.rows:
            return []
        kinds = list(dict.fromkeys(kind for row in self.rows.values() for kind in row.scores))[:_MAX_KINDS]
        turns = any(row.latencies for row in self.rows.values())
        header = ["variant", "runs", "pass rate", *kinds, "cost", "latency", *(["turns"] if turns else [])]
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
    rate = row.pass_rate(strict=strict)
    means = row.mean_scores()
    cost = "unknown" if row.cost is None else f"${row.cost:.4f}"
    mean_s = row.duration_s / row.runs if row.runs else 0.0
    return [
        row.name,
        str(row.runs),
        "n/a" if rate is None else f"{rate:.0%}",
        *(f"{means[k]:.2f}" if k in means else "-" for k in kinds),
        cost,
        f"{mean_s:.2f}s",
    ]
