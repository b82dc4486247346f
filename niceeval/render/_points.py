"""Score evals' points as every report shows them: `2/3 points`, and means as a share of the points possible.

A run's points are shown as earned of possible. Over an eval's runs, and over the suite, the mean is taken of each
run's share of its eval's points (so an eval out of 10 weighs as much as one out of 3), with a 95% interval: over
one eval's runs each run counts on its own; over the suite, the runs of one case form a cluster (or the eval's
`cluster=`), as for the suite's pass rate (`niceeval.stats.clustered_mean_of_sums`).
"""

from __future__ import annotations

from collections.abc import Iterable
from math import fsum

from niceeval._core.suite_totals import SuiteTotals
from niceeval._core.summary import EvalTally, points_by_cluster
from niceeval._core.wording import plural, share
from niceeval.render._uncertainty import interval_text, moments_of
from niceeval.stats import Estimate, clustered_mean, clustered_mean_of, clustered_mean_of_sums


def points_text(earned: float, possible: float) -> str:
    """`2/3 points`."""
    return f"{earned:g}/{possible:g} points"


def eval_points(tally: EvalTally) -> Estimate:
    """One score eval's mean share of its points over its counted runs, with a t interval over the runs."""
    return clustered_mean(tally.points_fractions, bounds=(0.0, 1.0))


def eval_points_text(tally: EvalTally) -> str:
    """`2/3 points` for one run; `mean 2.33/3 points (78%, 95% CI 40-100%)` over several; "" for a pass/fail eval."""
    possible, earned = tally.points_possible, tally.points_earned
    if possible is None or not earned:
        return ""
    if len(earned) == 1:
        return points_text(earned[0], possible)
    estimate = eval_points(tally)
    interval = interval_text(estimate)
    shown = share(estimate.value) + (f", {interval}" if interval else "") if estimate.value is not None else ""
    return f"mean {fsum(earned) / len(earned):.3g}/{possible:g} points ({shown})"


def suite_points(tallies: Iterable[EvalTally]) -> Estimate:
    """The mean share of points over the suite's score evals' runs, clustered by case (or `cluster=`)."""
    sums = points_by_cluster(tallies)
    if not sums:
        return Estimate(value=None, note="no score evals")
    return clustered_mean_of_sums(sums, bounds=(0.0, 1.0))


def folded_points(totals: SuiteTotals) -> Estimate:
    """`suite_points` of a suite folded as it ran (`SuiteSummary.totals`)."""
    if not totals.points.items:
        return Estimate(value=None, note="no score evals")
    return clustered_mean_of(moments_of(totals.points), bounds=(0.0, 1.0))


def suite_points_text(tallies: Iterable[EvalTally]) -> str:
    """`mean points 67% of possible (95% CI 40-90%) over 3 cases`; "" when the suite has no score eval."""
    return _mean_points_text(suite_points(tallies))


def folded_points_text(totals: SuiteTotals) -> str:
    """`suite_points_text` of a suite folded as it ran (`SuiteSummary.totals`)."""
    return _mean_points_text(folded_points(totals))


def _mean_points_text(estimate: Estimate) -> str:
    if estimate.value is None:
        return ""
    interval = interval_text(estimate) or (estimate.note or "")
    return (
        f"mean points {share(estimate.value)} of possible ({interval}) over {plural(estimate.clusters, 'case')}, "
        f"{plural(estimate.n, 'run')}"
    )
