"""Tests of change between two runs: exact per eval, paired over cases, and false discovery control across evals.

Every test is two-sided; a regression is a significant change whose difference is negative. When no outcome on
the data at hand could reach `alpha` (three runs against three cannot: Fisher's smallest p-value there is 0.1),
the result carries a note instead of a p-value. scipy is imported inside each function: it takes seconds to load.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Sequence
from dataclasses import replace
from typing import Any

from ._intervals import clustered_mean, wilson
from ._results import Comparison, Estimate


def compare_rates(before: tuple[int, int], after: tuple[int, int], *, alpha: float = 0.05) -> Comparison:
    """One eval's pass count `(k, n)` before and after: Fisher's exact test, Newcombe's interval.

    The interval for the difference is Newcombe's hybrid score interval (method 10), built from the two Wilson
    intervals; it behaves at 0 and 1 where `p2 - p1 ± z·se` does not.
    """
    _check_alpha(alpha)
    (k1, n1), (k2, n2) = before, after
    if n1 == 0 or n2 == 0:
        return Comparison(test="fisher", n=n1 + n2, difference=None, alpha=alpha, note="no runs on one side")
    first, second = wilson(k1, n1), wilson(k2, n2)
    p1, p2 = k1 / n1, k2 / n2
    assert first.low is not None and first.high is not None and second.low is not None and second.high is not None
    difference = p2 - p1
    low = difference - math.hypot(p2 - second.low, first.high - p1)
    high = difference + math.hypot(second.high - p2, p1 - first.low)
    result = Comparison(test="fisher", n=n1 + n2, difference=difference, low=low, high=high, alpha=alpha)
    if _fisher(n1, n1, 0, n2) > alpha:
        return replace(result, note=f"{n1} vs {n2} runs: not enough to tell")
    return replace(result, p_value=_fisher(k1, n1, k2, n2))


@functools.lru_cache(maxsize=4096)
def _fisher(k1: int, n1: int, k2: int, n2: int) -> float:
    """Fisher's two-sided p-value; cached, since a suite repeats the same few tables (3 runs: 16 of them)."""
    import numpy as np
    from scipy.stats import fisher_exact

    return min(1.0, float(fisher_exact(np.array([[k1, n1 - k1], [k2, n2 - k2]])).pvalue))


def mcnemar(before: Sequence[bool], after: Sequence[bool], *, alpha: float = 0.05) -> Comparison:
    """Pass/fail of the same cases before and after: McNemar's exact test (a binomial test on the flips).

    Only the cases that flipped carry evidence; `p = binomtest(fixed, flipped, 0.5)`. The interval for the
    difference is Newcombe's square-and-add interval for paired proportions (`_paired_interval`): 11 cases that
    all passed on both sides leave a change of up to 26 points either way possible, where the mean of the paired
    differences' t interval said exactly 0.
    """
    from scipy.stats import binomtest

    _check_alpha(alpha)
    _check_paired(before, after)
    n = len(before)
    broke = sum(1 for b, a in zip(before, after, strict=True) if b and not a)
    fixed = sum(1 for b, a in zip(before, after, strict=True) if a and not b)
    both = sum(1 for b, a in zip(before, after, strict=True) if a and b)
    if n == 0:
        return Comparison(test="mcnemar", n=0, difference=None, alpha=alpha, note=_not_enough(0))
    low, high = _paired_interval(both, broke, fixed, n - both - broke - fixed)
    result = Comparison(
        test="mcnemar", n=n, difference=(fixed - broke) / n, low=low, high=high, alpha=alpha,
        unchanged=broke + fixed == 0,
    )  # fmt: skip
    if n < min_pairs(alpha):
        return replace(result, note=_not_enough(n))
    p_value = 1.0 if broke + fixed == 0 else float(binomtest(fixed, broke + fixed, 0.5).pvalue)
    return replace(result, p_value=p_value)


def _paired_interval(both: int, broke: int, fixed: int, neither: int) -> tuple[float, float]:
    """The 95% interval of `after - before` for paired pass/fail counts: Newcombe's square-and-add interval (1998,
    method 10, with its correction of the correlation), built from each side's Wilson interval.

    `both` passed on each side, `broke` passed before only, `fixed` after only, `neither` on no side.
    """
    n = both + broke + fixed + neither
    passed_before, passed_after = both + broke, both + fixed
    p1, p2 = passed_before / n, passed_after / n
    first, second = wilson(passed_before, n), wilson(passed_after, n)
    assert first.low is not None and first.high is not None and second.low is not None and second.high is not None
    product = passed_before * (n - passed_before) * passed_after * (n - passed_after)
    correlation = 0.0
    if product:
        cross = both * neither - broke * fixed
        if cross > n / 2:
            correlation = (cross - n / 2) / math.sqrt(product)
        elif cross < 0:
            correlation = cross / math.sqrt(product)
    down_after, up_before = p2 - second.low, first.high - p1
    up_after, down_before = second.high - p2, p1 - first.low
    low = p2 - p1 - math.sqrt(max(0.0, down_after**2 + up_before**2 - 2 * correlation * down_after * up_before))
    high = p2 - p1 + math.sqrt(max(0.0, up_after**2 + down_before**2 - 2 * correlation * up_after * down_before))
    return max(-1.0, low), min(1.0, high)


def paired_t(
    before: Sequence[float],
    after: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    *,
    alpha: float = 0.05,
) -> Comparison:
    """Scores or pass rates of the same cases before and after: a t test on the paired differences.

    With `clusters` the standard error is cluster-robust and t has (clusters - 1) degrees of freedom; without,
    this is exactly `scipy.stats.ttest_rel`.
    """
    from scipy.stats import t as student_t

    _check_alpha(alpha)
    _check_paired(before, after)
    differences = [a - b for b, a in zip(before, after, strict=True)]
    spread = clustered_mean(differences, clusters)
    result = replace(_from_spread("paired t", spread.clusters, spread, alpha), unchanged=_none_moved(differences))
    if spread.clusters < min_pairs(alpha):
        return replace(result, note=_not_enough(spread.clusters))
    assert spread.value is not None and spread.stderr is not None
    if spread.stderr == 0:
        return replace(result, p_value=1.0 if spread.value == 0 else 0.0)
    statistic = spread.value / spread.stderr
    p_value = float(2 * student_t.sf(abs(statistic), spread.clusters - 1))
    return replace(result, p_value=p_value)


def paired_bootstrap(
    before: Sequence[float],
    after: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    *,
    alpha: float = 0.05,
    resamples: int = 9999,
    seed: int = 0,
) -> Comparison:
    """Paired differences without assuming normality: a cluster bootstrap interval, a sign-flip p-value.

    The interval resamples whole clusters (BCa, `scipy.stats.bootstrap`); the p-value flips the sign of each
    cluster's summed difference (`scipy.stats.permutation_test`, exact when 2^clusters <= resamples), which is
    the paired randomisation test of "no change". Seeded: the same data gives the same numbers.
    """
    import numpy as np
    from scipy.stats import bootstrap, permutation_test

    _check_alpha(alpha)
    _check_paired(before, after)
    differences = [a - b for b, a in zip(before, after, strict=True)]
    keys: Sequence[Hashable] = clusters if clusters is not None else range(len(differences))
    sums: dict[Hashable, list[float]] = {}
    for key, difference in zip(keys, differences, strict=True):
        sums.setdefault(key, [0.0, 0.0])
        sums[key][0] += difference
        sums[key][1] += 1
    total, count = np.array([s for s, _ in sums.values()]), np.array([c for _, c in sums.values()])
    n = len(total)
    mean = float(total.sum() / count.sum()) if n else None
    unchanged = _none_moved(differences)
    if n < min_pairs(alpha):
        return Comparison(
            test="paired bootstrap", n=n, difference=mean, alpha=alpha, note=_not_enough(n), unchanged=unchanged
        )
    assert mean is not None

    def ratio(s: Any, c: Any, axis: int = -1) -> Any:
        return s.sum(axis=axis) / c.sum(axis=axis)

    if np.all(total / count == total[0] / count[0]):  # no spread: nothing to resample, the change is certain
        return Comparison(
            test="paired bootstrap",
            n=n,
            difference=mean,
            low=mean,
            high=mean,
            p_value=1.0 if mean == 0 else 0.0,
            alpha=alpha,
            unchanged=unchanged,
        )
    interval = bootstrap(
        (total, count), ratio, paired=True, vectorized=True, n_resamples=resamples, confidence_level=0.95, rng=seed
    ).confidence_interval
    flips = permutation_test(
        (total,),
        lambda s, axis=-1: s.sum(axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=resamples,
        rng=seed,
    )
    return Comparison(
        test="paired bootstrap",
        n=n,
        difference=mean,
        low=float(interval.low),
        high=float(interval.high),
        p_value=float(flips.pvalue),
        alpha=alpha,
    )


def benjamini_hochberg(p_values: Sequence[float | None]) -> list[float | None]:
    """Adjusted p-values (q-values) controlling the false discovery rate across many evals.

    Compare each q-value with alpha: at most alpha of the changes called significant are expected to be noise,
    so a 500-eval suite does not fail by chance. None (not enough data) stays None and takes no part.
    """
    from scipy.stats import false_discovery_control

    present = [p for p in p_values if p is not None]
    if not present:
        return [None] * len(p_values)
    adjusted = iter(float(q) for q in false_discovery_control(present, method="bh"))
    return [None if p is None else next(adjusted) for p in p_values]


def min_pairs(alpha: float) -> int:
    """The fewest paired cases on which a two-sided sign test can reach `alpha` at all (6 at 0.05)."""
    _check_alpha(alpha)
    return max(2, math.ceil(math.log2(2 / alpha)))


def _from_spread(test: str, n: int, spread: Estimate, alpha: float) -> Comparison:
    return Comparison(test=test, n=n, difference=spread.value, low=spread.low, high=spread.high, alpha=alpha)


def _none_moved(differences: Sequence[float]) -> bool:
    """Every paired case the same on both sides (and at least one case)."""
    return bool(differences) and not any(differences)


def _not_enough(n: int) -> str:
    return f"{n} shared case{'s' * (n != 1)}: not enough to tell"


def _check_paired(before: Sequence[Any], after: Sequence[Any]) -> None:
    if len(before) != len(after):
        raise ValueError(f"paired data needs one value per case on each side, got {len(before)} and {len(after)}")


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1 (e.g. 0.05), got {alpha}")
