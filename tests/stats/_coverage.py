"""How often the suite's 95% pass-rate interval (`clustered_rate`) holds the true rate, by simulation.

Shared by tests/stats/test_coverage.py (a fast, seeded check) and bench/coverage.py (the table in
docs/statistics.md, with more replicates). A suite is `cases` cases drawn from a population whose mean pass rate
is `rate`: each case's own rate is drawn from a Beta distribution with that mean and concentration
`HETEROGENEITY` (1: most cases nearly always pass or nearly always fail, as in real suites), and each case runs
`runs` times. The interval covers when it holds `rate`, the population's mean: the cases are a sample.

With one run per case the count of passes is binomial, so the coverage is computed exactly, from
`clustered_rate` itself. With several runs it is simulated, the intervals computed by `interval_bounds`: the same
arithmetic as `clustered_rate` on numpy arrays (a test checks the two agree), since calling it once per
simulated suite would take minutes.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
from numpy.typing import NDArray

from niceeval.stats import clustered_rate
from niceeval.stats._intervals import PSEUDO_CASE

CASES = (5, 10, 20, 50, 100, 200, 500)
RATES = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95)
HETEROGENEITY = 1.0
"""The Beta distribution's concentration (a + b) for the cases' own rates: smaller is more heterogeneous."""

Floats = NDArray[np.float64]


def one_run_coverage(cases: int) -> list[float]:
    """The exact coverage at each of `RATES`, for `cases` cases of one run each."""
    covers = []
    for passing in range(cases + 1):
        interval = clustered_rate([(1, 1)] * passing + [(0, 1)] * (cases - passing))
        assert interval.low is not None and interval.high is not None
        covers.append((interval.low, interval.high))
    return [
        math.fsum(
            math.comb(cases, k) * rate**k * (1 - rate) ** (cases - k)
            for k, (low, high) in enumerate(covers)
            if low <= rate <= high
        )
        for rate in RATES
    ]


def simulated_passes(
    cases: int, runs: int, rate: float, replicates: int, rng: np.random.Generator, heterogeneity: float
) -> NDArray[np.int64]:
    """`replicates` suites of `cases` cases drawn around `rate`, each run `runs` times: passes per case."""
    own = rng.beta(rate * heterogeneity, (1 - rate) * heterogeneity, size=(replicates, cases))
    return rng.binomial(runs, own)


def interval_bounds(passes: NDArray[np.int64], runs: int, confidence: float = 0.95) -> tuple[Floats, Floats]:
    """`clustered_rate` on each row of `passes` (every case its own cluster, `runs` runs each), vectorised."""
    cases = passes.shape[1]
    rates = passes / runs
    value = rates.mean(axis=1)
    total = cases + 2 * PSEUDO_CASE
    shrunk = (rates.sum(axis=1) + PSEUDO_CASE) / total
    spread = ((rates - shrunk[:, None]) ** 2).sum(axis=1) + PSEUDO_CASE * ((1 - shrunk) ** 2 + shrunk**2)
    independent = shrunk * (1 - shrunk) * (cases / runs) / (total * cases)
    design_effect = np.maximum(1.0, spread / (total * total) / independent)
    effective = cases * runs / design_effect
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    centre = (value + z * z / (2 * effective)) / (1 + z * z / effective)
    half = z / (1 + z * z / effective) * np.sqrt(value * (1 - value) / effective + z * z / (4 * effective**2))
    return np.maximum(0.0, centre - half), np.minimum(1.0, centre + half)


def repeated_run_coverage(
    cases: int, runs: int, replicates: int, rng: np.random.Generator, heterogeneity: float = HETEROGENEITY
) -> list[float]:
    """The simulated coverage at each of `RATES`, for `cases` cases of `runs` runs each."""
    found = []
    for rate in RATES:
        low, high = interval_bounds(simulated_passes(cases, runs, rate, replicates, rng, heterogeneity), runs)
        found.append(float(np.mean((low <= rate) & (rate <= high))))
    return found
