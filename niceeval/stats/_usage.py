"""What a change costs: the agent's cost per run and per passed run, and p50/p95 turn latency, on each side of a
comparison, with paired bootstrap intervals over the shared cases.

`estimate_usage` gives the same measures for one side alone, each with its bootstrap interval over the cases
(what `niceeval exp compare` shows per setup).

Input is per case on each side: its runs, passed runs, the agent's summed cost and every turn's latency. Cases
sharing a cluster are pooled first (the cluster is the unit resampled). Cost per run is a ratio of sums (total
cost over total runs), so a case run more often weighs more only as far as it cost more. Latency quantiles pool
every turn, as the run reports do; a case resampled twice brings its turns twice.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from ._bootstrap import RESAMPLES, PairedChange, PairedResampler
from ._normal import BOOTSTRAP_CLUSTERS, METHOD, NormalPaired
from ._results import Estimate


@dataclass(frozen=True, kw_only=True)
class CaseUsage:
    """One case (an eval, over its runs) on one side of a comparison."""

    runs: int
    """Runs counted (skipped runs are not)."""
    passed: int
    """Runs that passed under the comparison's verdict rule."""
    cost: float | None
    """The agent's USD summed over the runs; None when a model it called has no price."""
    latencies: tuple[float, ...] = ()
    """Every measured turn's seconds, over the runs."""


@dataclass(frozen=True, kw_only=True)
class UsageComparison:
    """Cost and latency over the shared cases; a measure is None when it cannot be compared (`notes` say why)."""

    cases: int
    clusters: int
    cost_per_run: PairedChange | None
    cost_per_pass: PairedChange | None
    latency_p50: PairedChange | None
    latency_p95: PairedChange | None
    unpriced: int = 0
    """Shared clusters that called a model with no price on either side (then cost is not compared)."""
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class UsageEstimate:
    """One side's cost and latency over its cases, each with its bootstrap interval; a measure is None when it
    cannot be estimated (`notes` say why)."""

    cases: int
    clusters: int
    cost_per_run: Estimate | None
    cost_per_pass: Estimate | None
    latency_p50: Estimate | None
    latency_p95: Estimate | None
    unpriced: int = 0
    """Clusters that called a model with no price (then cost is not estimated)."""
    notes: tuple[str, ...] = ()


@dataclass(slots=True)
class _Pooled:
    runs: int = 0
    passed: int = 0
    cost: float | None = 0.0
    latencies: list[float] = field(default_factory=list)

    def add(self, usage: CaseUsage) -> None:
        self.runs += usage.runs
        self.passed += usage.passed
        self.cost = None if self.cost is None or usage.cost is None else self.cost + usage.cost
        self.latencies.extend(usage.latencies)


def compare_usage(
    before: Mapping[str, CaseUsage],
    after: Mapping[str, CaseUsage],
    *,
    clusters: Mapping[str, Hashable] | None = None,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> UsageComparison:
    """Compare the cases both sides ran (at least one counted run each), resampling `clusters` (default: each case
    its own)."""
    shared = sorted(c for c in before.keys() & after.keys() if before[c].runs > 0 and after[c].runs > 0)
    pooled_b, pooled_a = _pool(shared, before, clusters), _pool(shared, after, clusters)
    keys = list(pooled_b)
    if not keys:
        return UsageComparison(cases=0, clusters=0, cost_per_run=None, cost_per_pass=None, latency_p50=None,
                               latency_p95=None, notes=("no shared case",))  # fmt: skip
    notes: list[str] = []
    resampler = _resampler(len(keys), resamples, seed)
    old_cases, new_cases = [pooled_b[k] for k in keys], [pooled_a[k] for k in keys]
    unpriced = sum(1 for old, new in zip(old_cases, new_cases, strict=True) if old.cost is None or new.cost is None)
    cost_per_run, cost_per_pass = _costs(resampler, old_cases, new_cases, unpriced, notes)
    timed = [k for k in keys if pooled_b[k].latencies and pooled_a[k].latencies]
    latency_p50 = latency_p95 = None
    if timed:
        turns = _resampler(len(timed), resamples, seed)
        old, new = [pooled_b[k].latencies for k in timed], [pooled_a[k].latencies for k in timed]
        latency_p50, latency_p95 = turns.quantiles(old, new, (0.5, 0.95))
        if len(timed) < len(keys):
            notes.append(
                f"latency over the {len(timed)} of {len(keys)} shared cases with a measured turn on both sides"
            )
    else:
        notes.append("no turn latency measured on both sides of any shared case")
    return UsageComparison(
        cases=len(shared), clusters=len(keys), cost_per_run=cost_per_run, cost_per_pass=cost_per_pass,
        latency_p50=latency_p50, latency_p95=latency_p95, unpriced=unpriced, notes=tuple(notes),
    )  # fmt: skip


def _resampler(clusters: int, resamples: int, seed: int) -> PairedResampler | NormalPaired:
    """The paired bootstrap up to `BOOTSTRAP_CLUSTERS` clusters, the normal approximation above."""
    if clusters > BOOTSTRAP_CLUSTERS:
        return NormalPaired(clusters)
    return PairedResampler(clusters, resamples=resamples, seed=seed)


def _pool(
    shared: Sequence[str], usage: Mapping[str, CaseUsage], clusters: Mapping[str, Hashable] | None
) -> dict[Hashable, _Pooled]:
    pooled: dict[Hashable, _Pooled] = {}
    for case in shared:
        key = clusters.get(case, case) if clusters is not None else case
        pooled.setdefault(key, _Pooled()).add(usage[case])
    return pooled


def _costs(
    resampler: PairedResampler | NormalPaired,
    before: Sequence[_Pooled],
    after: Sequence[_Pooled],
    unpriced: int,
    notes: list[str],
) -> tuple[PairedChange | None, PairedChange | None]:
    """Cost per run and per passed run, or None with a note: an unpriced model, or no cost on either side."""
    if unpriced:
        notes.append(f"cost not compared: {unpriced} shared case(s) called a model with no price (set pricing=)")
        return None, None
    old_costs, new_costs = [p.cost or 0.0 for p in before], [p.cost or 0.0 for p in after]
    if not any(old_costs) and not any(new_costs):
        notes.append("cost not compared: the agent spent nothing on either side")
        return None, None
    per_run = resampler.ratio((old_costs, [p.runs for p in before]), (new_costs, [p.runs for p in after]))
    if not any(p.passed for p in before) or not any(p.passed for p in after):
        notes.append("cost per passed run not compared: no run passed on one side")
        return per_run, None
    per_pass = resampler.ratio((old_costs, [p.passed for p in before]), (new_costs, [p.passed for p in after]))
    return per_run, per_pass


def estimate_usage(
    usage: Mapping[str, CaseUsage],
    *,
    clusters: Mapping[str, Hashable] | None = None,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> UsageEstimate:
    """One side's cost per run and per passed run, p50 and p95 turn latency, over its cases with a counted run,
    resampling `clusters` (default: each case its own)."""
    counted = sorted(c for c, u in usage.items() if u.runs > 0)
    pooled = _pool(counted, usage, clusters)
    cases = list(pooled.values())
    if not cases:
        return UsageEstimate(cases=0, clusters=0, cost_per_run=None, cost_per_pass=None, latency_p50=None,
                             latency_p95=None, notes=("no counted run",))  # fmt: skip
    notes: list[str] = []
    if len(cases) > BOOTSTRAP_CLUSTERS:
        notes.append(f"intervals by {METHOD} over {len(cases):,} clusters (a bootstrap up to {BOOTSTRAP_CLUSTERS:,})")
    resampler = _resampler(len(cases), resamples, seed)
    unpriced = sum(1 for case in cases if case.cost is None)
    cost_per_run = cost_per_pass = None
    if unpriced:
        notes.append(f"cost not estimated: {unpriced} case(s) called a model with no price (set pricing=)")
    else:
        costs = [case.cost or 0.0 for case in cases]
        cost_per_run = resampler.ratio_of((costs, [case.runs for case in cases]))
        if any(case.passed for case in cases):
            cost_per_pass = resampler.ratio_of((costs, [case.passed for case in cases]))
        else:
            notes.append("cost per passed run not estimated: no run passed")
    timed = [case.latencies for case in cases if case.latencies]
    latency_p50 = latency_p95 = None
    if timed:
        turns = _resampler(len(timed), resamples, seed)
        latency_p50, latency_p95 = turns.quantiles_of(timed, (0.5, 0.95))
        if len(timed) < len(cases):
            notes.append(f"latency over the {len(timed)} of {len(cases)} cases with a measured turn")
    else:
        notes.append("no turn latency measured")
    return UsageEstimate(
        cases=len(counted), clusters=len(cases), cost_per_run=cost_per_run, cost_per_pass=cost_per_pass,
        latency_p50=latency_p50, latency_p95=latency_p95, unpriced=unpriced, notes=tuple(notes),
    )  # fmt: skip
