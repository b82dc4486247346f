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

import itertools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._bootstrap import RESAMPLES, PairedChange, PairedResampler
from ._normal import BOOTSTRAP_CLUSTERS, METHOD, NormalPaired
from ._results import Estimate

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


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
class UsageColumns:
    """One side's cases as columns, the i-th entry of each being case `cases[i]`'s (what `CaseUsage` holds per
    case): a store reads 100,000 cases into four columns without an object per case."""

    cases: Sequence[str]
    runs: Sequence[int]
    passed: Sequence[int]
    cost: Sequence[float | None]
    latencies: Mapping[str, Sequence[float]]
    """Every measured turn's seconds, by case (a case with none may be left out)."""

    @classmethod
    def of(cls, usage: Mapping[str, CaseUsage]) -> UsageColumns:
        """`usage` as columns."""
        found = list(usage.values())
        return cls(
            cases=list(usage), runs=[u.runs for u in found], passed=[u.passed for u in found],
            cost=[u.cost for u in found], latencies={c: u.latencies for c, u in usage.items() if u.latencies},
        )  # fmt: skip


Usage = Mapping[str, CaseUsage] | UsageColumns
"""One side's cases: by case, or as columns."""


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


@dataclass(frozen=True, kw_only=True)
class _Pooled:
    """The cases pooled by cluster, as columns (one entry per cluster, in the order the clusters first appear)."""

    runs: NDArray[np.float64]
    passed: NDArray[np.float64]
    cost: NDArray[np.float64]
    """The clusters' summed cost; 0 where `unpriced`."""
    unpriced: NDArray[np.bool_]
    """A case of the cluster called a model with no price."""
    latencies: dict[int, list[float]]
    """Every measured turn's seconds, per cluster that has any (by its number)."""

    @property
    def clusters(self) -> int:
        return len(self.runs)


def compare_usage(
    before: Usage,
    after: Usage,
    *,
    clusters: Mapping[str, Hashable] | None = None,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> UsageComparison:
    """Compare the cases both sides ran (at least one counted run each), resampling `clusters` (default: each case
    its own). Each side is a mapping of cases, or their `UsageColumns`."""
    old_side, new_side = _columns(before), _columns(after)
    shared, old_rows, new_rows = _shared(old_side, new_side)
    owner, clusters_found = _owners(shared, clusters)
    if not clusters_found:
        return UsageComparison(cases=0, clusters=0, cost_per_run=None, cost_per_pass=None, latency_p50=None,
                               latency_p95=None, notes=("no shared case",))  # fmt: skip
    pooled_b = _pool(shared, old_side, old_rows, owner, clusters_found)
    pooled_a = _pool(shared, new_side, new_rows, owner, clusters_found)
    notes: list[str] = []
    resampler = _resampler(clusters_found, resamples, seed)
    unpriced = int((pooled_b.unpriced | pooled_a.unpriced).sum())
    cost_per_run, cost_per_pass = _costs(resampler, pooled_b, pooled_a, unpriced, notes)
    timed = sorted(pooled_b.latencies.keys() & pooled_a.latencies.keys())
    latency_p50 = latency_p95 = None
    if timed:
        turns = _resampler(len(timed), resamples, seed)
        old, new = [pooled_b.latencies[k] for k in timed], [pooled_a.latencies[k] for k in timed]
        latency_p50, latency_p95 = turns.quantiles(old, new, (0.5, 0.95))
        if len(timed) < clusters_found:
            notes.append(
                f"latency over the {len(timed)} of {clusters_found} shared cases with a measured turn on both sides"
            )
    else:
        notes.append("no turn latency measured on both sides of any shared case")
    return UsageComparison(
        cases=len(shared), clusters=clusters_found, cost_per_run=cost_per_run, cost_per_pass=cost_per_pass,
        latency_p50=latency_p50, latency_p95=latency_p95, unpriced=unpriced, notes=tuple(notes),
    )  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class _Side:
    """A side's columns as arrays, and each case's row in them."""

    columns: UsageColumns
    runs: NDArray[np.float64]
    row: dict[str, int]


def _columns(usage: Usage) -> _Side:
    import numpy as np

    columns = usage if isinstance(usage, UsageColumns) else UsageColumns.of(usage)
    return _Side(
        columns=columns,
        runs=np.asarray(columns.runs, dtype=float),
        row={case: i for i, case in enumerate(columns.cases)},
    )


def _shared(before: _Side, after: _Side) -> tuple[list[str], NDArray[np.int64], NDArray[np.int64]]:
    """The cases both sides ran (at least one counted run each), sorted, and their rows on each side."""
    both = sorted(before.row.keys() & after.row.keys())
    old, new = _rows(before, both), _rows(after, both)
    ran = (before.runs[old] > 0) & (after.runs[new] > 0)
    return list(itertools.compress(both, ran.tolist())), old[ran], new[ran]


def _rows(side: _Side, cases: Sequence[str]) -> NDArray[np.int64]:
    """The rows of `cases` in `side`'s columns."""
    import numpy as np

    return np.fromiter(map(side.row.__getitem__, cases), dtype=np.int64, count=len(cases))


def _resampler(clusters: int, resamples: int, seed: int) -> PairedResampler | NormalPaired:
    """The paired bootstrap up to `BOOTSTRAP_CLUSTERS` clusters, the normal approximation above."""
    if clusters > BOOTSTRAP_CLUSTERS:
        return NormalPaired(clusters)
    return PairedResampler(clusters, resamples=resamples, seed=seed)


def _owners(cases: Sequence[str], clusters: Mapping[str, Hashable] | None) -> tuple[NDArray[np.int64], int]:
    """Each case's cluster as a number (clusters numbered as they first appear in `cases`), and how many there are."""
    import numpy as np

    if clusters is None:
        return np.arange(len(cases)), len(cases)
    numbers: dict[Hashable, int] = {}
    owner = np.fromiter(
        (numbers.setdefault(clusters.get(c, c), len(numbers)) for c in cases), dtype=np.int64, count=len(cases)
    )
    return owner, len(numbers)


def _pool(
    cases: Sequence[str], side: _Side, rows: NDArray[np.int64], owner: NDArray[np.int64], clusters: int
) -> _Pooled:
    """The cases' runs, passes, cost and turns summed per cluster (`rows`: each case's row in the side's columns,
    `owner`: its cluster number)."""
    import numpy as np

    columns = side.columns
    costs = np.asarray(columns.cost, dtype=float)[rows]  # None: nan, a model with no price
    missing = np.isnan(costs)
    latencies: dict[int, list[float]] = {}
    if columns.latencies:
        timed = columns.latencies
        for cluster, case in zip(owner.tolist(), cases, strict=True):
            turns = timed.get(case)
            if turns:
                latencies.setdefault(cluster, []).extend(turns)
    return _Pooled(
        runs=_summed(owner, side.runs[rows], clusters),
        passed=_summed(owner, np.asarray(columns.passed, dtype=float)[rows], clusters),
        cost=_summed(owner, np.where(missing, 0.0, costs), clusters),
        unpriced=_summed(owner, missing, clusters) > 0,
        latencies=latencies,
    )


def _summed(owner: NDArray[np.int64], values: Sequence[float] | NDArray[Any], clusters: int) -> NDArray[np.float64]:
    """`values` summed per cluster, in the order they come (a cluster's sum adds its cases one after another)."""
    import numpy as np

    return np.asarray(np.bincount(owner, weights=values, minlength=clusters), dtype=float)


def _costs(
    resampler: PairedResampler | NormalPaired, before: _Pooled, after: _Pooled, unpriced: int, notes: list[str]
) -> tuple[PairedChange | None, PairedChange | None]:
    """Cost per run and per passed run, or None with a note: an unpriced model, or no cost on either side."""
    if unpriced:
        notes.append(f"cost not compared: {unpriced} shared case(s) called a model with no price (set pricing=)")
        return None, None
    if not before.cost.any() and not after.cost.any():
        notes.append("cost not compared: the agent spent nothing on either side")
        return None, None
    per_run = resampler.ratio((before.cost, before.runs), (after.cost, after.runs))
    if not before.passed.any() or not after.passed.any():
        notes.append("cost per passed run not compared: no run passed on one side")
        return per_run, None
    per_pass = resampler.ratio((before.cost, before.passed), (after.cost, after.passed))
    return per_run, per_pass


def estimate_usage(
    usage: Usage,
    *,
    clusters: Mapping[str, Hashable] | None = None,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> UsageEstimate:
    """One side's cost per run and per passed run, p50 and p95 turn latency, over its cases with a counted run,
    resampling `clusters` (default: each case its own). `usage` is a mapping of cases, or their `UsageColumns`."""
    side = _columns(usage)
    cases = sorted(side.row)
    rows = _rows(side, cases)
    ran = side.runs[rows] > 0
    counted = list(itertools.compress(cases, ran.tolist()))
    owner, clusters_found = _owners(counted, clusters)
    if not clusters_found:
        return UsageEstimate(cases=0, clusters=0, cost_per_run=None, cost_per_pass=None, latency_p50=None,
                             latency_p95=None, notes=("no counted run",))  # fmt: skip
    pooled = _pool(counted, side, rows[ran], owner, clusters_found)
    notes: list[str] = []
    if clusters_found > BOOTSTRAP_CLUSTERS:
        notes.append(
            f"intervals by {METHOD} over {clusters_found:,} clusters (a bootstrap up to {BOOTSTRAP_CLUSTERS:,})"
        )
    resampler = _resampler(clusters_found, resamples, seed)
    unpriced = int(pooled.unpriced.sum())
    cost_per_run = cost_per_pass = None
    if unpriced:
        notes.append(f"cost not estimated: {unpriced} case(s) called a model with no price (set pricing=)")
    else:
        cost_per_run = resampler.ratio_of((pooled.cost, pooled.runs))
        if pooled.passed.any():
            cost_per_pass = resampler.ratio_of((pooled.cost, pooled.passed))
        else:
            notes.append("cost per passed run not estimated: no run passed")
    timed = [pooled.latencies[k] for k in sorted(pooled.latencies)]
    latency_p50 = latency_p95 = None
    if timed:
        turns = _resampler(len(timed), resamples, seed)
        latency_p50, latency_p95 = turns.quantiles_of(timed, (0.5, 0.95))
        if len(timed) < clusters_found:
            notes.append(f"latency over the {len(timed)} of {clusters_found} cases with a measured turn")
    else:
        notes.append("no turn latency measured")
    return UsageEstimate(
        cases=len(counted), clusters=clusters_found, cost_per_run=cost_per_run, cost_per_pass=cost_per_pass,
        latency_p50=latency_p50, latency_p95=latency_p95, unpriced=unpriced, notes=tuple(notes),
    )  # fmt: skip
