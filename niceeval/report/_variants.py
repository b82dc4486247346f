"""The per-variant comparison as the console and the JSON report give it: each rate with its uncertainty.

The table itself is collected by `niceeval.render.VariantTable` (the HTML report and the viewer show it as it
is); here each variant's pass rate and mean scores get a standard error clustered by case.
"""

from __future__ import annotations

from typing import Any

from niceeval._core.summary import latency_text, percentile
from niceeval._core.wording import share, share_range, usd
from niceeval.render import VariantRow, VariantTable, estimate_json, rate_over_cases, weighted_mean_over_cases
from niceeval.stats import Estimate


def rate_estimate(row: VariantRow, *, strict: bool) -> Estimate:
    """The variant's pass rate with a standard error clustered by case."""
    return rate_over_cases(
        (case, passed + (0 if strict else scored), counted) for case, (passed, scored, counted) in row.cases.items()
    )


def score_estimates(row: VariantRow) -> dict[str, Estimate]:
    """Each assertion kind's mean score with a standard error clustered by case (a case's mean is its score)."""
    return {
        kind: weighted_mean_over_cases([(total, count) for total, count in cases.values()])
        for kind, cases in row.case_scores.items()
    }


def variant_records(table: VariantTable, *, strict: bool) -> list[dict[str, Any]]:
    """The JSON report's `variants` (docs/json-report.md): one record per variant."""
    return [_record(row, strict=strict) for row in table.rows.values()]


def _record(row: VariantRow, *, strict: bool) -> dict[str, Any]:
    return {
        "variant": row.name,
        "runs": row.runs,
        "pass_rate": row.pass_rate(strict=strict),
        "pass_rate_estimate": estimate_json(rate_estimate(row, strict=strict)),
        "mean_scores": {kind: round(score, 6) for kind, score in row.mean_scores().items()},
        "mean_score_estimates": {kind: estimate_json(e) for kind, e in score_estimates(row).items()},
        "cost": row.cost,
        "mean_duration_s": round(row.mean_duration_s, 6),
        "latency_p50_s": percentile(row.latencies, 0.5),
        "latency_p95_s": percentile(row.latencies, 0.95),
    }


def variant_lines(table: VariantTable, *, strict: bool) -> list[str]:
    """The table as aligned plain-text lines (no lines when there were no variants)."""
    if not table.rows:
        return []
    kinds = table.kinds()
    turns = any(row.latencies for row in table.rows.values())
    header = ["variant", "runs", "pass rate", "95% CI", *kinds, "cost", "latency", *(["turns"] if turns else [])]
    body = [
        _cells(row, kinds, strict) + ([latency_text(row.latencies) or "-"] if turns else [])
        for row in table.rows.values()
    ]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    out = [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in [header, *body]
    ]
    return ["Variants:", *(" " + line for line in out)]


def _cells(row: VariantRow, kinds: list[str], strict: bool) -> list[str]:
    means = score_estimates(row)
    return [
        row.name,
        str(row.runs),
        *_rate_cells(rate_estimate(row, strict=strict)),
        *(_score_text(means[k]) if k in means else "-" for k in kinds),
        usd(row.cost),
        f"{row.mean_duration_s:.2f}s",
    ]


def _rate_cells(estimate: Estimate) -> list[str]:
    """The pass rate and its 95% interval over cases (`-` with fewer than two cases)."""
    if estimate.value is None:
        return ["n/a", "-"]
    if estimate.low is None or estimate.high is None:
        return [share(estimate.value), "-"]
    return [share(estimate.value), share_range(estimate.low, estimate.high)]


def _score_text(estimate: Estimate) -> str:
    """`0.80±0.03` (± the standard error over cases), or the bare mean with fewer than two cases."""
    if estimate.value is None:
        return "-"
    return f"{estimate.value:.2f}" if estimate.stderr is None else f"{estimate.value:.2f}±{estimate.stderr:.2f}"
