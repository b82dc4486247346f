"""The paired cluster bootstrap, vectorised: ratios of sums and quantiles of pooled values over shared clusters.

Both sides are resampled with the same draws: resample `b` takes cluster `k` `W[b, k]` times on each side, so the
change is measured on the same cases and the case-to-case spread that both sides share cancels. The draws are one
`B x K` matrix of counts, made once per comparison; a resample's sum is then a dot product, and its quantile a
weighted rank over the values sorted once, found for every resample by one binary search. The interval is the
expanded percentile interval of the resampled changes (Hesterberg 2015): its tails are taken at `alpha'/2` where
`z(1 - alpha'/2) = sqrt(K / (K - 1)) * t(1 - alpha/2, K - 1)`, which widens it for few clusters as a t interval
is wider than a z interval (the plain percentile interval of 5 cases is far too narrow) and leaves it as it is
for many. Seeded: the same data gives the same interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ._results import Estimate

if TYPE_CHECKING:
    from typing import TypeAlias

    import numpy as np
    from numpy.typing import NDArray

    Column: TypeAlias = Sequence[float] | NDArray[np.float64]
    """One value per cluster: a list, or a numpy column (`_usage` pools its cases into columns)."""

RESAMPLES = 2000
_CELLS_PER_CHUNK = 250_000
"""Weighted quantiles are computed this many (resample, value) cells at a time: memory stays bounded."""


@dataclass(frozen=True, kw_only=True)
class PairedChange:
    """One measure on each side over the same clusters, and the bootstrap interval of its change.

    `difference` is after minus before, `relative` is after / before - 1 (None when `before` is 0, 0 when both
    are). Each has its expanded percentile interval at `confidence`; an interval is None, and `note` says why,
    with one cluster (no spread to resample) or when a resample leaves the measure undefined (a ratio over no
    passed run, say).
    """

    before: float | None
    after: float | None
    difference: float | None
    low: float | None = None
    high: float | None = None
    relative: float | None = None
    relative_low: float | None = None
    relative_high: float | None = None
    clusters: int = 0
    resamples: int = 0
    confidence: float = 0.95
    note: str | None = None
    method: str = "paired bootstrap"
    """How the interval was found: `paired bootstrap`, or `normal approximation` above `BOOTSTRAP_CLUSTERS`."""


class PairedResampler:
    """`resamples` draws of `clusters` shared clusters, made once and applied to every measure of one comparison.

    `clusters` is the number of shared clusters; the measures' inputs give one entry per cluster, in one order.
    """

    def __init__(self, clusters: int, *, resamples: int = RESAMPLES, seed: int = 0, confidence: float = 0.95) -> None:
        import numpy as np

        if clusters < 1:
            raise ValueError("a paired bootstrap needs at least one shared cluster")
        if not 0 < confidence < 1:
            raise ValueError(f"confidence must be between 0 and 1 (e.g. 0.95), got {confidence}")
        self.clusters = clusters
        self.resamples = resamples
        self.confidence = confidence
        drawn = np.random.default_rng(seed).integers(0, clusters, size=(resamples, clusters))
        drawn += np.arange(resamples)[:, None] * clusters  # resample b's draws counted in row b
        counts = np.bincount(drawn.ravel(), minlength=resamples * clusters)
        self._weights: NDArray[np.int32] = counts.reshape(resamples, clusters).astype(np.int32)
        """How often each resample draws each cluster (each row sums to `clusters`)."""
        self._sums: NDArray[np.float64] = self._weights.astype(float)
        """The same counts as floats: a resample's sum is then a row's dot product."""

    def ratio(self, before: tuple[Column, Column], after: tuple[Column, Column]) -> PairedChange:
        """The ratio of sums on each side (`(numerators, denominators)`, one of each per cluster): the cost per
        run is each cluster's summed cost over its summed runs."""
        import numpy as np

        (top_b, bottom_b), (top_a, bottom_a) = (self._column(v) for v in before), (self._column(v) for v in after)
        if bottom_b.sum() == 0 or bottom_a.sum() == 0:
            return PairedChange(
                before=None, after=None, difference=None, clusters=self.clusters, note="nothing to divide by"
            )
        point_b, point_a = float(top_b.sum() / bottom_b.sum()), float(top_a.sum() / bottom_a.sum())
        under_b, under_a = self._sum(bottom_b), self._sum(bottom_a)
        if np.any(under_b == 0) or np.any(under_a == 0):
            return self._change(
                point_b, point_a, None, None, note="some resamples have nothing to divide by: no interval"
            )
        return self._change(point_b, point_a, self._sum(top_b) / under_b, self._sum(top_a) / under_a)

    def _sum(self, per_cluster: NDArray[np.float64]) -> NDArray[np.float64]:
        """Each resample's sum of a per-cluster value. einsum, not `@`: a multi-threaded BLAS call stalls for tens
        of milliseconds when the machine's cores are busy, and this product is small."""
        import numpy as np

        summed: NDArray[np.float64] = np.einsum("bk,k->b", self._sums, per_cluster)
        return summed

    def quantiles(
        self, before: Sequence[Sequence[float]], after: Sequence[Sequence[float]], qs: Sequence[float]
    ) -> list[PairedChange]:
        """For each `q` of `qs`, the `q` quantile (linear interpolation between ranks) of every value pooled over
        the clusters, each cluster giving its own values (a case's turn latencies): p95 is `q=0.95`. Every cluster
        needs a value on each side."""
        if any(not 0 <= q <= 1 for q in qs):
            raise ValueError(f"a quantile is between 0 and 1, got {list(qs)}")
        if any(not values for values in [*before, *after]):
            raise ValueError("every shared cluster needs at least one value on each side")
        points_b, resampled_b = self._quantiles(before, qs)
        points_a, resampled_a = self._quantiles(after, qs)
        return [self._change(points_b[i], points_a[i], resampled_b[:, i], resampled_a[:, i]) for i in range(len(qs))]

    def ratio_of(self, side: tuple[Column, Column]) -> Estimate:
        """One side's ratio of sums (`(numerators, denominators)`, one of each per cluster) with the expanded
        percentile interval of its resamples: what one setup's cost per run is, on its own."""
        import numpy as np

        top, bottom = (self._column(v) for v in side)
        if bottom.sum() == 0:
            return Estimate(value=None, clusters=self.clusters, confidence=self.confidence, note="nothing to divide by")
        point, under = float(top.sum() / bottom.sum()), self._sum(bottom)
        if np.any(under == 0):
            return self._estimate(point, None, "some resamples have nothing to divide by: no interval")
        return self._estimate(point, self._sum(top) / under)

    def quantiles_of(self, groups: Sequence[Sequence[float]], qs: Sequence[float]) -> list[Estimate]:
        """One side's `q` quantiles of the values pooled over the clusters (as `quantiles`), each with the
        expanded percentile interval of its resamples. Every cluster needs a value."""
        if any(not 0 <= q <= 1 for q in qs):
            raise ValueError(f"a quantile is between 0 and 1, got {list(qs)}")
        if any(not values for values in groups):
            raise ValueError("every cluster needs at least one value")
        points, resampled = self._quantiles(groups, qs)
        return [self._estimate(points[i], resampled[:, i]) for i in range(len(qs))]

    def _estimate(self, value: float, resampled: NDArray[np.float64] | None, note: str | None = None) -> Estimate:
        import numpy as np

        if self.clusters == 1:
            resampled, note = None, note or "1 case: no spread to measure"
        found = Estimate(value=value, n=self.clusters, clusters=self.clusters, confidence=self.confidence, note=note)
        if resampled is None:
            return found
        tail = _expanded_tail(self.confidence, self.clusters)
        low, high = np.quantile(resampled, [tail, 1 - tail])
        return replace(found, low=float(low), high=float(high))

    def _column(self, values: Column) -> NDArray[np.float64]:
        import numpy as np

        if len(values) != self.clusters:
            raise ValueError(f"{len(values)} values for {self.clusters} clusters: give one per cluster")
        return np.asarray(values, dtype=float)

    def _quantiles(
        self, groups: Sequence[Sequence[float]], qs: Sequence[float]
    ) -> tuple[list[float], NDArray[np.float64]]:
        """The quantiles over all the values, and over each resample's values (`resamples x len(qs)`; a cluster
        drawn twice counts twice)."""
        import numpy as np

        if len(groups) != self.clusters:
            raise ValueError(f"{len(groups)} value lists for {self.clusters} clusters: give one per cluster")
        values = np.concatenate([np.asarray(g, dtype=float) for g in groups])
        owner = np.repeat(np.arange(self.clusters), [len(g) for g in groups])
        order = np.argsort(values, kind="stable")
        values, owner = values[order], owner[order]
        points = _weighted_quantiles(values, np.ones((1, len(values)), dtype=np.int32), qs)[0]
        step = max(1, _CELLS_PER_CHUNK // len(values))
        resampled = np.concatenate(
            [
                _weighted_quantiles(values, self._weights[s : s + step][:, owner], qs)
                for s in range(0, self.resamples, step)
            ]
        )
        return [float(p) for p in points], resampled

    def _change(
        self,
        before: float,
        after: float,
        resampled_b: NDArray[np.float64] | None,
        resampled_a: NDArray[np.float64] | None,
        note: str | None = None,
    ) -> PairedChange:
        import numpy as np

        relative = after / before - 1 if before != 0 else (0.0 if after == 0 else None)
        if self.clusters == 1:
            resampled_b = resampled_a = None
            note = note or "1 shared case: no spread to measure"
        change = PairedChange(
            before=before, after=after, difference=after - before, relative=relative, clusters=self.clusters,
            resamples=self.resamples, confidence=self.confidence, note=note,
        )  # fmt: skip
        if resampled_b is None or resampled_a is None:
            return change
        tail = _expanded_tail(self.confidence, self.clusters)
        low, high = np.quantile(resampled_a - resampled_b, [tail, 1 - tail])
        if relative is None or np.any(resampled_b == 0):
            return replace(change, low=float(low), high=float(high))
        relative_low, relative_high = np.quantile(resampled_a / resampled_b - 1, [tail, 1 - tail])
        return replace(
            change,
            low=float(low),
            high=float(high),
            relative_low=float(relative_low),
            relative_high=float(relative_high),
        )


def _weighted_quantiles(
    values: NDArray[np.float64], weights: NDArray[np.int32], qs: Sequence[float]
) -> NDArray[np.float64]:
    """Per row of `weights` (how often each of the sorted `values` is drawn), each `q` quantile of the drawn
    values as `percentile` takes it over a list: linear interpolation between the ranks around `(n - 1) * q`.

    The ranks are found with one binary search over every row at once: the rows' running counts, each shifted
    above the row before, form one sorted array."""
    import numpy as np

    rows, width = weights.shape
    step = int(weights.sum(axis=1).max()) + 1
    exact = np.int32 if rows * step < 2**31 else np.int64  # the narrower type halves the memory traffic
    shift: NDArray[np.signedinteger[Any]] = np.arange(0, rows * step, step, dtype=exact)[:, None]
    counted: NDArray[np.signedinteger[Any]] = np.cumsum(weights, axis=1, dtype=exact)
    drawn = counted[:, -1]
    flat = (counted + shift).ravel()
    starts = np.arange(rows, dtype=np.int64) * width
    columns = []
    for q in qs:
        position = (drawn - 1) * q
        below = np.floor(position).astype(exact)
        above = np.minimum(below + 1, drawn - 1)
        at_below = np.searchsorted(flat, below + shift[:, 0], side="right") - starts
        at_above = np.searchsorted(flat, above + shift[:, 0], side="right") - starts
        low_value, high_value = values[at_below], values[at_above]
        columns.append(low_value + (high_value - low_value) * (position - below))
    result: NDArray[np.float64] = np.stack(columns, axis=1)
    return result


def _expanded_tail(confidence: float, clusters: int) -> float:
    """The tail probability of the expanded percentile interval over `clusters` clusters (at least 2)."""
    from statistics import NormalDist

    from ._intervals import t_quantile

    wanted = math.sqrt(clusters / (clusters - 1)) * t_quantile(0.5 + confidence / 2, clusters - 1)
    return 1 - NormalDist().cdf(wanted)
