"""Statistics on plain numbers: intervals, tests of change, power, what a change costs, how far raters agree.

What a change costs is a paired bootstrap of cost and latency with a one-line verdict; of several setups, the
Pareto front on quality, cost and latency (a dominance claimed only where the intervals support it); agreement
is Cohen's kappa and a Wilson interval. Pure functions on counts and lists, returning small frozen records that
say when there is not enough data instead of printing a fake-precise number. `wilson`, `clustered_rate`,
`clustered_mean`, `power` and `agreement` need only the standard library (the console shows them after every
run); the tests of change import scipy when called, the bootstrap numpy.

Names load on first use: a run imports the intervals it shows, never the tests of change it does not make.

Design: docs/design/stats.md
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from niceeval._core.lazy import lazy_getattr

if TYPE_CHECKING:
    from ._adaptive import AdaptiveRuns, parse_runs
    from ._agreement import Agreement, agreement, cohen_kappa
    from ._bootstrap import PairedChange, PairedResampler
    from ._front import Dominance, dominance, pareto_front
    from ._gate import EvalChange, RunComparison, ScoreTest, compare_runs
    from ._intervals import (
        ClusterMoments,
        RateSums,
        clustered_mean,
        clustered_mean_of,
        clustered_mean_of_sums,
        clustered_rate,
        clustered_rate_of,
        clustered_rate_of_sums,
        t_quantile,
        wilson,
    )
    from ._power import power, power_of
    from ._results import Comparison, Estimate, Power
    from ._sequential import DriftMonitor, evidence_paths, mean_lower_bound
    from ._significance import benjamini_hochberg, compare_rates, mcnemar, min_pairs, paired_bootstrap, paired_t
    from ._usage import CaseUsage, UsageColumns, UsageComparison, UsageEstimate, compare_usage, estimate_usage
    from ._verdict import Dimension, Verdict, verdict

_HOMES = {
    "AdaptiveRuns": "niceeval.stats._adaptive",
    "parse_runs": "niceeval.stats._adaptive",
    "Agreement": "niceeval.stats._agreement",
    "agreement": "niceeval.stats._agreement",
    "cohen_kappa": "niceeval.stats._agreement",
    "PairedChange": "niceeval.stats._bootstrap",
    "PairedResampler": "niceeval.stats._bootstrap",
    "CaseUsage": "niceeval.stats._usage",
    "UsageEstimate": "niceeval.stats._usage",
    "estimate_usage": "niceeval.stats._usage",
    "Dominance": "niceeval.stats._front",
    "dominance": "niceeval.stats._front",
    "pareto_front": "niceeval.stats._front",
    "UsageColumns": "niceeval.stats._usage",
    "UsageComparison": "niceeval.stats._usage",
    "compare_usage": "niceeval.stats._usage",
    "Dimension": "niceeval.stats._verdict",
    "Verdict": "niceeval.stats._verdict",
    "verdict": "niceeval.stats._verdict",
    "benjamini_hochberg": "niceeval.stats._significance",
    "compare_rates": "niceeval.stats._significance",
    "mcnemar": "niceeval.stats._significance",
    "min_pairs": "niceeval.stats._significance",
    "paired_bootstrap": "niceeval.stats._significance",
    "paired_t": "niceeval.stats._significance",
    "EvalChange": "niceeval.stats._gate",
    "RunComparison": "niceeval.stats._gate",
    "ScoreTest": "niceeval.stats._gate",
    "compare_runs": "niceeval.stats._gate",
    "clustered_mean": "niceeval.stats._intervals",
    "clustered_mean_of_sums": "niceeval.stats._intervals",
    "clustered_rate": "niceeval.stats._intervals",
    "ClusterMoments": "niceeval.stats._intervals",
    "clustered_mean_of": "niceeval.stats._intervals",
    "clustered_rate_of": "niceeval.stats._intervals",
    "power_of": "niceeval.stats._power",
    "clustered_rate_of_sums": "niceeval.stats._intervals",
    "RateSums": "niceeval.stats._intervals",
    "t_quantile": "niceeval.stats._intervals",
    "wilson": "niceeval.stats._intervals",
    "power": "niceeval.stats._power",
    "DriftMonitor": "niceeval.stats._sequential",
    "evidence_paths": "niceeval.stats._sequential",
    "mean_lower_bound": "niceeval.stats._sequential",
    "Comparison": "niceeval.stats._results",
    "Estimate": "niceeval.stats._results",
    "Power": "niceeval.stats._results",
}

__all__ = [
    "AdaptiveRuns",
    "Agreement",
    "CaseUsage",
    "ClusterMoments",
    "Comparison",
    "Dimension",
    "Dominance",
    "DriftMonitor",
    "Estimate",
    "EvalChange",
    "PairedChange",
    "PairedResampler",
    "Power",
    "RateSums",
    "RunComparison",
    "ScoreTest",
    "UsageColumns",
    "UsageComparison",
    "UsageEstimate",
    "Verdict",
    "agreement",
    "benjamini_hochberg",
    "clustered_mean",
    "clustered_mean_of",
    "clustered_mean_of_sums",
    "clustered_rate",
    "clustered_rate_of",
    "clustered_rate_of_sums",
    "cohen_kappa",
    "compare_rates",
    "compare_runs",
    "compare_usage",
    "dominance",
    "estimate_usage",
    "evidence_paths",
    "mcnemar",
    "mean_lower_bound",
    "min_pairs",
    "paired_bootstrap",
    "paired_t",
    "parse_runs",
    "pareto_front",
    "power",
    "power_of",
    "t_quantile",
    "verdict",
    "wilson",
]

__getattr__ = lazy_getattr(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted(__all__)
