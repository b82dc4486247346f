"""Statistics on plain numbers: intervals on rates and means, tests of change, power.

Pure functions on counts and lists, returning small frozen records that say when there is not enough data
instead of printing a fake-precise number. `wilson`, `clustered_mean` and `power` need only the standard
library (the console shows them after every run); the tests of change import scipy when called.
"""

from ._adaptive import AdaptiveRuns, parse_runs
from ._compare import benjamini_hochberg, compare_rates, mcnemar, min_pairs, paired_bootstrap, paired_t
from ._gate import EvalChange, RunComparison, ScoreTest, compare_runs
from ._intervals import clustered_mean, clustered_mean_of_sums, clustered_rate, t_quantile, wilson
from ._power import power
from ._results import Comparison, Estimate, Power

__all__ = [
    "AdaptiveRuns",
    "Comparison",
    "Estimate",
    "EvalChange",
    "Power",
    "RunComparison",
    "ScoreTest",
    "benjamini_hochberg",
    "clustered_mean",
    "clustered_mean_of_sums",
    "clustered_rate",
    "compare_rates",
    "compare_runs",
    "mcnemar",
    "min_pairs",
    "paired_bootstrap",
    "paired_t",
    "parse_runs",
    "power",
    "t_quantile",
    "wilson",
]
