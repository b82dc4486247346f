"""Power: the smallest drop in pass rate a suite can detect, and the cases or runs a named drop needs.

A paired comparison of two runs of the suite looks at each case's change in pass rate, d_i. Its variance is
the run-to-run noise of both sides, `2·σ²/K` (σ² the within-case variance of one run's pass/fail, K runs per
case), plus the spread of the change itself. We take that spread at its largest for a drop δ: whole cases
flipping from pass to fail, `δ(1-δ)`. So `Var(d) = 2σ²/K + δ(1-δ)` and a two-sided test at alpha detects δ with
the given power when `δ = (z_{1-alpha/2} + z_power) · sqrt(Var(d) / n)` (Miller 2024, section 5), solved for δ
in closed form. σ² is measured: the mean over cases of `p_i(1-p_i)·K/(K-1)`; with one run per case it cannot be
told apart from the spread between cases, and the whole `p(1-p)` is taken (conservative).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist

from ._intervals import ClusterMoments
from ._results import Power


def power(
    case_rates: Sequence[float], runs: int, *, detect: float | None = None, alpha: float = 0.05, power: float = 0.8
) -> Power:
    """What a suite with these per-case pass rates (each over `runs` runs) can detect.

    `detect`, a drop in pass rate (e.g. 0.05), also asks how many cases (at these runs) or runs (at these cases)
    would detect it.
    """
    rates = _Rates(len(case_rates), math.fsum(case_rates), math.fsum(p * (1 - p) for p in case_rates))
    return _power(rates, runs, detect=detect, alpha=alpha, power=power)


def power_of(
    moments: ClusterMoments, runs: int, *, detect: float | None = None, alpha: float = 0.05, power: float = 0.8
) -> Power:
    """`power` from a suite's folded case rates (`ClusterMoments`: their count, sum and sum of squares)."""
    rates = _Rates(moments.items, moments.total, max(0.0, moments.total - moments.squares))
    return _power(rates, runs, detect=detect, alpha=alpha, power=power)


@dataclass(frozen=True, slots=True)
class _Rates:
    cases: int
    total: float
    """Σ p_i."""
    variances: float
    """Σ p_i·(1 - p_i)."""


def _power(rates: _Rates, runs: int, *, detect: float | None, alpha: float, power: float) -> Power:
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must be between 0 and 1, got alpha={alpha}, power={power}")
    if detect is not None and not 0 < detect <= 1:
        raise ValueError(f"the drop to detect must be between 0 and 1 (e.g. 0.05), got {detect}")
    if runs < 1:
        raise ValueError(f"runs per case must be at least 1, got {runs}")
    n = rates.cases
    nothing = Power(
        cases=n,
        runs=runs,
        alpha=alpha,
        power=power,
        detect=detect,
        pass_rate=None,
        run_to_run_variance=None,
        detectable_drop=None,
    )
    if n == 0:
        return replace(nothing, note="no cases")
    mean = rates.total / n
    variance = rates.variances / n * runs / (runs - 1) if runs > 1 else mean * (1 - mean)
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    noise = 2 * variance / runs
    result = replace(
        nothing, pass_rate=mean, run_to_run_variance=variance, detectable_drop=_smallest_drop(z * z / n, noise)
    )
    if detect is None:
        return result
    cases_needed = math.ceil(z * z * (noise + detect * (1 - detect)) / (detect * detect))
    room = n * detect * detect / (z * z) - detect * (1 - detect)
    runs_needed: int | None = None
    note = None
    if room <= 0:
        note = f"more runs alone cannot detect a drop of {detect:.2f}: it needs {cases_needed} cases"
    else:
        runs_needed = max(1, math.ceil(2 * variance / room))
    return replace(result, cases_needed=cases_needed, runs_needed=runs_needed, note=note)


def _smallest_drop(c: float, noise: float) -> float:
    """The δ solving δ² = c·(noise + δ - δ²), capped at 1."""
    return min(1.0, (c + math.sqrt(c * c + 4 * (1 + c) * c * noise)) / (2 * (1 + c)))
