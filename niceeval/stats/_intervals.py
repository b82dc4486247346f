"""Intervals that need no scipy: the console shows them after every run, and scipy takes seconds to import.

The Wilson interval is a closed form in the normal quantile (`statistics.NormalDist`); a suite's pass rate
(`clustered_rate`) is Wilson's interval at an effective sample size. The clustered mean of scores uses Student's
t quantile, computed from the t distribution's closed forms for integer degrees of freedom; a test checks it
against scipy's to 1e-9.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist

from ._results import Estimate


def wilson(k: int, n: int, *, confidence: float = 0.95) -> Estimate:
    """The Wilson score interval for `k` passes out of `n` runs.

    Unlike `k/n ± z·se`, it stays inside 0..1 and is honest at the edges: 10 of 10 is 0.72-1.00, not "100%".
    """
    _check_confidence(confidence)
    if not 0 <= k <= n:
        raise ValueError(f"a pass count needs 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return Estimate(value=None, confidence=confidence, note="no runs")
    low, high = _wilson_bounds(k / n, n, confidence)
    return Estimate(value=k / n, low=low, high=high, n=n, clusters=n, confidence=confidence)


def _wilson_bounds(p: float, n: float, confidence: float) -> tuple[float, float]:
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def clustered_rate(
    counts: Sequence[tuple[int, int]], clusters: Sequence[Hashable] | None = None, *, confidence: float = 0.95
) -> Estimate:
    """A suite's pass rate from each case's `(passes, runs)`: the mean of the cases' rates, with a score interval.

    Every case weighs the same, however many runs it got. The interval is Wilson's at the effective sample size:
    the runs, divided by the design effect of their clusters (how much more the rate varies between cases than
    independent runs would make it). One run per case is Wilson's interval over the cases, exactly; the same
    method at every size, with no switch at the edges. `clusters[i]` names the group case `i` belongs to (cases
    drawn from one source document); by default each case is its own. Coverage is checked by simulation
    (tests/stats/test_coverage.py, docs/statistics.md).
    """
    _check_confidence(confidence)
    if clusters is not None and len(clusters) != len(counts):
        raise ValueError(f"{len(counts)} cases but {len(clusters)} cluster keys: give one key per case")
    keys: Sequence[Hashable] = clusters if clusters is not None else range(len(counts))
    groups: dict[Hashable, list[float]] = {}
    runs = 0
    inverse_runs = 0.0
    for (passes, made), key in zip(counts, keys, strict=True):
        if not 0 <= passes <= made:
            raise ValueError(f"a pass count needs 0 <= passes <= runs, got {passes} of {made}")
        if made:
            groups.setdefault(key, []).append(passes / made)
            runs += made
            inverse_runs += 1 / made
    rates = [rate for group in groups.values() for rate in group]
    rate_sum = math.fsum(rates)

    def spread(shrunk: float) -> float:
        if len(groups) == len(rates):  # each case its own cluster: a cluster's sum is its one rate, as `fsum` gives
            return math.fsum((rate - shrunk) ** 2 for rate in rates)
        return math.fsum(math.fsum(rate - shrunk for rate in group) ** 2 for group in groups.values())

    cases = RateSums(count=len(rates), rate_sum=rate_sum, runs=runs, inverse_runs=inverse_runs, clusters=len(groups))
    return clustered_rate_of_sums(cases, spread, confidence=confidence)


@dataclass(frozen=True, kw_only=True, slots=True)
class ClusterMoments:
    """What a clustered estimate needs, as sums a suite folds one cluster at a time (memory that does not grow
    with its cases): each cluster `c` contributes a total `T_c` over its `m_c` items.

    For a pass rate (`clustered_rate_of`) the items are cases, `T_c` the sum of their rates, and `runs` and
    `inverse_runs` sum each case's runs and their reciprocals; for a mean (`clustered_mean_of`) the items are
    values and `T_c` their sum. `squares` sums each item's square (a pass rate's power reads it).
    """

    clusters: int = 0
    items: int = 0
    total: float = 0.0
    squares: float = 0.0
    runs: int = 0
    inverse_runs: float = 0.0
    cluster_squares: float = 0.0
    """Σ_c T_c²."""
    cluster_cross: float = 0.0
    """Σ_c T_c·m_c."""
    cluster_size_squares: float = 0.0
    """Σ_c m_c²."""

    def spread(self, centre: float) -> float:
        """Σ_c (T_c - centre·m_c)²: the clusters' summed deviations from `centre`, squared and added."""
        expanded = self.cluster_squares - 2 * centre * self.cluster_cross + centre * centre * self.cluster_size_squares
        return max(0.0, expanded)


def clustered_rate_of(moments: ClusterMoments, *, confidence: float = 0.95) -> Estimate:
    """`clustered_rate` from a suite's folded `ClusterMoments` (to rounding: the spread is taken from sums)."""
    _check_confidence(confidence)
    cases = RateSums(
        count=moments.items,
        rate_sum=moments.total,
        runs=moments.runs,
        inverse_runs=moments.inverse_runs,
        clusters=moments.clusters,
    )
    return clustered_rate_of_sums(cases, moments.spread, confidence=confidence)


def clustered_mean_of(
    moments: ClusterMoments, *, confidence: float = 0.95, bounds: tuple[float, float] | None = None
) -> Estimate:
    """`clustered_mean_of_sums` from a suite's folded `ClusterMoments` (to rounding)."""
    _check_confidence(confidence)
    if moments.items == 0:
        return Estimate(value=None, confidence=confidence, note="no values")
    mean = moments.total / moments.items
    return _mean_estimate(mean, moments.items, moments.clusters, moments.spread(mean), confidence, bounds)


@dataclass(frozen=True, kw_only=True, slots=True)
class RateSums:
    """What `clustered_rate` needs of its cases besides their spread, folded in one pass over them (in case order:
    `inverse_runs` is summed in it)."""

    count: int
    """Cases with at least one run."""
    rate_sum: float
    """The sum of their rates (`passes / runs`), exactly rounded (`math.fsum`)."""
    runs: int
    inverse_runs: float
    """The sum of `1 / runs` over those cases, one after the other."""
    clusters: int
    """Distinct clusters among them."""


def clustered_rate_of_sums(cases: RateSums, spread: Callable[[float], float], *, confidence: float = 0.95) -> Estimate:
    """`clustered_rate` from its cases' sums and their `spread`, for cases too many to hold (a store's suite run
    of a million evals folds them in two passes over its rows; a running suite folds `ClusterMoments`).

    `spread(shrunk)` is the sum over the clusters of the square of the sum of their cases' `rate - shrunk`
    (Σ_c (R_c - shrunk·m_c)²), called only when there are two clusters or more. Given each cluster's sum exactly
    rounded (`math.fsum`), the estimate is `clustered_rate`'s to the last bit.
    """
    _check_confidence(confidence)
    if not cases.count:
        return Estimate(value=None, confidence=confidence, note="no runs")
    value = cases.rate_sum / cases.count
    if cases.clusters < 2:
        unit = "case" if cases.count == 1 else "cluster"
        note = f"1 {unit}: no spread to measure"
        return Estimate(value=value, n=cases.runs, clusters=1, confidence=confidence, note=note)
    effective = cases.count**2 / cases.inverse_runs / _design_effect(cases, spread)
    low, high = _wilson_bounds(value, effective, confidence)
    stderr = math.sqrt(value * (1 - value) / effective)
    return Estimate(
        value=value, low=low, high=high, stderr=stderr, n=cases.runs, clusters=cases.clusters, confidence=confidence
    )


PSEUDO_CASE = 0.5
"""Half a case that always passes and half one that always fails, added when the design effect is measured."""


def _design_effect(cases: RateSums, spread_about: Callable[[float], float]) -> float:
    """How many times the variance of the mean of the case rates exceeds what independent runs would give (>= 1).

    The clustered variance is the spread of the clusters' summed deviations from the mean; independent runs of
    a case with `m` runs would give its rate a variance of `p(1-p)/m`. Both are taken with `PSEUDO_CASE` added on
    each side: when every case passed, or only one case missed, the spread between cases cannot be measured, and
    without the pseudo-cases 50 cases of 3 passing runs would count as 150 independent runs. With one run per
    case the ratio is exactly 1 (the variance of 0/1 outcomes is `p(1-p)` whatever the weights).
    """
    total = cases.count + 2 * PSEUDO_CASE
    shrunk = (cases.rate_sum + PSEUDO_CASE) / total
    spread = spread_about(shrunk) + PSEUDO_CASE * ((1 - shrunk) ** 2 + shrunk**2)
    clustered = spread / (total * total)
    independent = shrunk * (1 - shrunk) * cases.inverse_runs / (total * cases.count)
    return max(1.0, clustered / independent)


def clustered_mean(
    values: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    *,
    confidence: float = 0.95,
    bounds: tuple[float, float] | None = None,
) -> Estimate:
    """The mean of `values` with a cluster-robust standard error and a t interval over the clusters.

    `clusters[i]` names the group value `i` belongs to: the runs of one case form a cluster (they share the
    case's difficulty), and cases drawn from one source document may share a coarser key. Without clusters every
    value is its own and this is the usual `s / sqrt(n)`. With C clusters the variance is
    `C/(C-1) · Σ_c (Σ_{i∈c} (x_i - mean))² / n²` (Miller 2024, eq. 5), and the interval uses t with C-1 degrees
    of freedom, so a handful of cases gives the wide interval it deserves. `bounds` clips the interval to the
    values' possible range (`(0, 1)` for pass rates).
    """
    if clusters is None:  # each value its own cluster: its sum is the value (no grouping pass over 100,000)
        estimate = clustered_mean_of_sums([(value, 1) for value in values], confidence=confidence, bounds=bounds)
        return replace(estimate, note="1 value: no spread to measure") if estimate.clusters == 1 else estimate
    if len(clusters) != len(values):
        raise ValueError(f"{len(values)} values but {len(clusters)} cluster keys: give one key per value")
    sums: dict[Hashable, list[float]] = {}
    for key, value in zip(clusters, values, strict=True):
        total = sums.setdefault(key, [0.0, 0.0])
        total[0] += value
        total[1] += 1
    return clustered_mean_of_sums([(s, n) for s, n in sums.values()], confidence=confidence, bounds=bounds)


def clustered_mean_of_sums(
    sums: Sequence[tuple[float, float]], *, confidence: float = 0.95, bounds: tuple[float, float] | None = None
) -> Estimate:
    """`clustered_mean` from each cluster's `(sum of values, number of values)`: all the clustered error needs.

    A report can keep two numbers per case instead of every run's value.
    """
    _check_confidence(confidence)
    n = math.fsum(count for _, count in sums)
    count = sum(1 for _, size in sums if size > 0)
    if n == 0:
        return Estimate(value=None, confidence=confidence, note="no values")
    mean = math.fsum(total for total, _ in sums) / n
    deviations = math.fsum((total - size_c * mean) ** 2 for total, size_c in sums if size_c > 0) if count > 1 else 0.0
    return _mean_estimate(mean, n, count, deviations, confidence, bounds)


def _mean_estimate(
    mean: float, n: float, count: int, deviations: float, confidence: float, bounds: tuple[float, float] | None
) -> Estimate:
    """A clustered mean's interval: `count` clusters of `n` values in all, `deviations` = Σ_c (S_c - n_c·mean)²."""
    size = round(n)
    if count < 2:
        return Estimate(value=mean, n=size, clusters=count, confidence=confidence, note="1 case: no spread to measure")
    stderr = math.sqrt(count / (count - 1) * deviations) / n
    half = t_quantile(0.5 + confidence / 2, count - 1) * stderr
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = max(bounds[0], low), min(bounds[1], high)
    return Estimate(value=mean, low=low, high=high, stderr=stderr, n=size, clusters=count, confidence=confidence)


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile at probability `p` with `df` degrees of freedom, without scipy.

    Closed forms for 1, 2 and 4 degrees of freedom; otherwise the Cornish-Fisher expansion, polished by Newton
    steps on the exact t distribution function for integer df (Abramowitz & Stegun 26.7.3-4).
    """
    if not 0 < p < 1 or df < 1:
        raise ValueError(f"t quantile needs 0 < p < 1 and df >= 1, got p={p}, df={df}")
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    if df == 4:
        alpha = 4 * p * (1 - p)
        q = math.cos(math.acos(math.sqrt(alpha)) / 3) / math.sqrt(alpha)
        return math.copysign(2 * math.sqrt(q - 1), p - 0.5)
    z = NormalDist().inv_cdf(p)
    terms = (
        (z**3 + z) / 4,
        (5 * z**5 + 16 * z**3 + 3 * z) / 96,
        (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384,
        (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160,
    )
    t = z + math.fsum(term / float(df) ** (power + 1) for power, term in enumerate(terms))
    if df > 1000:  # the expansion alone is within 1e-9 here
        return t
    log_density_scale = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    for _ in range(3):
        density = math.exp(log_density_scale - (df + 1) / 2 * math.log1p(t * t / df))
        t -= (_t_cdf(t, df) - p) / density
    return t


def _t_cdf(t: float, df: int) -> float:
    """P(T <= t) for integer df: the finite series in theta = atan(t / sqrt(df))."""
    theta = math.atan(t / math.sqrt(df))
    cos2 = math.cos(theta) ** 2
    if df % 2:
        term, total = math.cos(theta), math.cos(theta) if df > 1 else 0.0
        for k in range(3, df - 1, 2):
            term *= (k - 1) / k * cos2
            total += term
        inside = 2 / math.pi * (theta + math.sin(theta) * total)
    else:
        term = total = 1.0
        for k in range(2, df - 1, 2):
            term *= (k - 1) / k * cos2
            total += term
        inside = math.sin(theta) * total
    return 0.5 + inside / 2


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1 (e.g. 0.95), got {confidence}")
