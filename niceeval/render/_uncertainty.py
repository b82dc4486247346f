"""Every rate and mean a report shows, with its uncertainty (docs/statistics.md): the one place reports read them.

One eval over `--runs N`: its pass rate with a 95% Wilson interval. A suite, or a variant, over its cases: the
mean of the cases' pass rates, each case weighing the same however many runs it got, with Wilson's interval at
the effective sample size of runs clustered by case (or by `define_eval(cluster=...)`). Only the standard
library is used here (`niceeval.stats`' intervals): reports run after every `niceeval run`, and scipy takes
seconds to import.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

from niceeval._core.suite_totals import ClusterSums, SuiteTotals
from niceeval._core.summary import EvalTally
from niceeval._core.wording import share, share_range
from niceeval.stats import (
    ClusterMoments,
    Estimate,
    Power,
    clustered_mean_of_sums,
    clustered_rate,
    clustered_rate_of,
    power,
    power_of,
    wilson,
)


def eval_rate(tally: EvalTally, *, strict: bool) -> Estimate:
    """One eval's pass rate over its runs, with a Wilson interval."""
    return runs_rate(tally.passing(strict=strict), tally.counted)


def runs_rate(passes: int, runs: int) -> Estimate:
    """`passes` of one eval's `runs`, with a Wilson interval (the HTML report's and the viewer's eval rows)."""
    return wilson(passes, runs)


def suite_rate(tallies: Iterable[EvalTally], *, strict: bool) -> Estimate:
    """The suite's pass rate: the mean of its evals' pass rates, clustered by case (or by `cluster=`).

    An eval under adaptive repeats counts its first runs (`PlannedEval.first_runs`): the rest were made or not
    on what those showed.
    """
    counted = [t for t in tallies if t.case_counts(strict=strict)[1]]
    return clustered_rate(
        [t.case_counts(strict=strict) for t in counted], [t.eval.cluster or t.eval.id for t in counted]
    )


def suite_power(tallies: Iterable[EvalTally], *, strict: bool) -> Power:
    """The smallest drop in pass rate the suite can detect (80% power, alpha 0.05), from its evals' rates."""
    counts = [c for c in (t.case_counts(strict=strict) for t in tallies) if c[1]]
    runs = Counter(n for _, n in counts).most_common(1)
    return power([k / n for k, n in counts], runs[0][0] if runs else 1)


def moments_of(sums: ClusterSums) -> ClusterMoments:
    """A suite's folded sums as `niceeval.stats` takes them."""
    return ClusterMoments(
        clusters=sums.clusters,
        items=sums.items,
        total=sums.total,
        squares=sums.squares,
        runs=sums.runs,
        inverse_runs=sums.inverse_runs,
        cluster_squares=sums.cluster_squares,
        cluster_cross=sums.cluster_cross,
        cluster_size_squares=sums.cluster_size_squares,
    )


def folded_rate(totals: SuiteTotals) -> Estimate:
    """`suite_rate` of a suite folded as it ran (`SuiteSummary.totals`): what every report of a run shows."""
    return clustered_rate_of(moments_of(totals.rates))


def folded_power(totals: SuiteTotals) -> Power:
    """`suite_power` of a suite folded as it ran (ties in the most common runs per case: the first folded)."""
    return power_of(moments_of(totals.rates), totals.runs_per_case())


def folded_case_rate(totals: SuiteTotals) -> Estimate:
    """The share of cases whose verdict is not `failed` (skipped cases and cases that measured nothing left
    out), clustered: `--min-suite-pass-rate`'s rate."""
    return clustered_rate_of(moments_of(totals.cases))


def power_text(result: Power) -> str:
    """`detects a drop of 0.20 in pass rate (80% power, alpha 0.05)`; empty with fewer than two cases."""
    if result.detectable_drop is None or result.cases < 2:
        return ""
    return (
        f"detects a drop of {result.detectable_drop:.2f} in pass rate or more ({result.power:.0%} power, alpha "
        f"{result.alpha:g}; niceeval power)"
    )


def rate_over_cases(counts: Iterable[tuple[Hashable, int, int]]) -> Estimate:
    """The pass rate of `(cluster, passes, runs)` rows, one per case: the mean of the cases' rates (`suite_rate`)."""
    rows = list(counts)
    return clustered_rate([(passes, runs) for _, passes, runs in rows], [key for key, _, _ in rows])


def weighted_mean_over_cases(sums: Sequence[tuple[float, float]]) -> Estimate:
    """The mean of scores given per case as `(sum, count)`, with a standard error clustered by case.

    The clustered standard error needs only each cluster's sum and size: `Σ_c (S_c - n_c·mean)²`.
    """
    return clustered_mean_of_sums(sums)


def percent(estimate: Estimate) -> str:
    """`80% (95% CI 49-94%)`; `n/a` without a value; the note when there is no interval."""
    if estimate.value is None:
        return "n/a"
    if estimate.low is None or estimate.high is None:
        return share(estimate.value)
    return f"{share(estimate.value)} (95% CI {share_range(estimate.low, estimate.high)})"


def interval_text(estimate: Estimate) -> str:
    """`95% CI 49-94%`, or empty when there is no interval."""
    if estimate.low is None or estimate.high is None:
        return ""
    return f"95% CI {share_range(estimate.low, estimate.high)}"


def estimate_json(estimate: Estimate) -> dict[str, Any]:
    """The JSON report's shape of an estimate (docs/json-report.md)."""
    return {
        "value": estimate.value,
        "stderr": estimate.stderr,
        "low": estimate.low,
        "high": estimate.high,
        "confidence": estimate.confidence,
        "n": estimate.n,
        "clusters": estimate.clusters,
        "note": estimate.note,
    }
