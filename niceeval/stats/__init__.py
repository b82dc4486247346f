"""Statistics on plain numbers: intervals on rates and means, tests of change, power.

Pure functions on counts and lists, returning small frozen records that say when there is not enough data
instead of printing a fake-precise number. `wilson`, `clustered_mean` and `power` need only the standard
library (the console shows them after every run); the tests of change import scipy when called.

Names load on first use: a run imports the intervals it shows, never the tests of change it does not make.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._adaptive import AdaptiveRuns, parse_runs
    from ._gate import EvalChange, RunComparison, ScoreTest, compare_runs
    from ._intervals import clustered_mean, clustered_mean_of_sums, clustered_rate, t_quantile, wilson
    from ._power import power
    from ._results import Comparison, Estimate, Power
    from ._significance import benjamini_hochberg, compare_rates, mcnemar, min_pairs, paired_bootstrap, paired_t

_HOMES = {
    "AdaptiveRuns": "niceeval.stats._adaptive",
    "parse_runs": "niceeval.stats._adaptive",
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
    "t_quantile": "niceeval.stats._intervals",
    "wilson": "niceeval.stats._intervals",
    "power": "niceeval.stats._power",
    "Comparison": "niceeval.stats._results",
    "Estimate": "niceeval.stats._results",
    "Power": "niceeval.stats._results",
}

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


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'niceeval.stats' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
