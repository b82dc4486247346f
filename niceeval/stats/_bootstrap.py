"""The paired cluster bootstrap, vectorised: ratios of sums and quantiles of pooled values over shared clusters.

Both sides are resampled with the same draws: resample `b` takes cluster `k` `W[b, k]` times on each side, so the
change is measured on the same cases and the case-to-case spread that both sides share cancels. The draws are one
`B x K` matrix of counts; a ratio of sums is then a matrix product, and a quantile a weighted rank over the
values sorted once, so 2,000 resamples of 1,000 cases take milliseconds. The interval is the percentile interval
of the resampled changes. Seeded: the same data gives the same interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

RESAMPLES = 2000
FEW_CLUSTERS = 6
"""Under this many shared clusters the bootstrap sees too few cases to show all the noise (it says so)."""
_CELLS_PER_CHUNK = 2_000_000
"""Weighted quantiles are computed this many (resample, value) cells at a time: memory stays bounded."""


@dataclass(frozen=True, kw_only=True)
class PairedChange:
    """One measure on each side over the same clusters, and the bootstrap interval of its change.

    `difference` is after minus before, `relative` is after / before - 1 (None when `before` is 0). Each has its
    percentile interval at `confidence`; an interval is None, and `note` says why, when a resample leaves the
    measure undefined (a ratio over no passed run, say).
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
        self._weights: NDArray[np.int64] = counts.reshape(resamples, clusters)
        """How often each resample draws each cluster (each row sums to `clusters`)."""

    def ratio(
        self, before: tuple[Sequence[float], Sequence[float]], after: tuple[Sequence[float], Sequence[float]]
    ) -> PairedChange:
        """The ratio of sums on each side (`(numerators, denominators)`, one of each per cluster): the cost per
        run is each cluster's summed cost over its summed runs."""
        import numpy as np

        (top_b, bottom_b), (top_a, bottom_a) = (self._column(v) for v in before), (self._column(v) for v in after)
        if bottom_b.sum() == 0 or bottom_a.sum() == 0:
            return PairedChange(
                before=None, after=None, difference=None, clusters=self.clusters, note="nothing to divide by"
            )
        point_b, point_a = float(top_b.sum() / bottom_b.sum()), float(top_a.sum() / bottom_a.sum())
        under_b, under_a = self._weights @ bottom_b, self._weights @ bottom_a
        if np.any(under_b == 0) or np.any(under_a == 0):
            return self._change(
                point_b, point_a, None, None, note="some resamples have nothing to divide by: no interval"
            )
        return self._change(point_b, point_a, (self._weights @ top_b) / under_b, (self._weights @ top_a) / under_a)

    def quantile(self, before: Sequence[Sequence[float]], after: Sequence[Sequence[float]], q: float) -> PairedChange:
        """The `q` quantile (linear interpolation between ranks) of every value pooled over the clusters, each
        cluster giving its own values (a case's turn latencies): p95 is `q=0.95`. Every cluster needs a value on
        each side."""
        if not 0 <= q <= 1:
            raise ValueError(f"a quantile is between 0 and 1, got {q}")
        if any(not values for values in [*before, *after]):
            raise ValueError("every shared cluster needs at least one value on each side")
        point_b, resampled_b = self._quantiles(before, q)
        point_a, resampled_a = self._quantiles(after, q)
        return self._change(point_b, point_a, resampled_b, resampled_a)

    def _column(self, values: Sequence[float]) -> NDArray[np.float64]:
        import numpy as np

        if len(values) != self.clusters:
            raise ValueError(f"{len(values)} values for {self.clusters} clusters: give one per cluster")
        return np.asarray(values, dtype=float)

    def _quantiles(self, groups: Sequence[Sequence[float]], q: float) -> tuple[float, NDArray[np.float64]]:
        """The quantile over all the values, and over each resample's values (a cluster drawn twice counts twice)."""
        import numpy as np

        if len(groups) != self.clusters:
            raise ValueError(f"{len(groups)} value lists for {self.clusters} clusters: give one per cluster")
        values = np.concatenate([np.asarray(g, dtype=float) for g in groups])
        owner = np.repeat(np.arange(self.clusters), [len(g) for g in groups])
        order = np.argsort(values, kind="stable")
        values, owner = values[order], owner[order]
        point = float(_weighted_quantile(values, np.ones((1, len(values)), dtype=np.int64), q)[0])
        step = max(1, _CELLS_PER_CHUNK // len(values))
        resampled = np.concatenate(
            [
                _weighted_quantile(values, self._weights[s : s + step][:, owner], q)
                for s in range(0, self.resamples, step)
            ]
        )
        return point, resampled

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
        if note is None and self.clusters < FEW_CLUSTERS:
            cases = f"{self.clusters} shared case{'s' * (self.clusters != 1)}"
            note = f"{cases}: too few for the interval to show all the noise"
        change = PairedChange(
            before=before, after=after, difference=after - before, relative=relative, clusters=self.clusters,
            resamples=self.resamples, confidence=self.confidence, note=note,
        )  # fmt: skip
        if resampled_b is None or resampled_a is None:
            return change
        tail = (1 - self.confidence) / 2
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


def _weighted_quantile(values: NDArray[np.float64], weights: NDArray[np.int64], q: float) -> NDArray[np.float64]:
    """Per row of `weights` (how often each of the sorted `values` is drawn), the `q` quantile of the drawn values
    as `percentile` takes it over a list: linear interpolation between the ranks around `(n - 1) * q`."""
    import numpy as np

    counted = np.cumsum(weights, axis=1)
    drawn = counted[:, -1]
    position = (drawn - 1) * q
    below = np.floor(position).astype(np.int64)
    above = np.minimum(below + 1, drawn - 1)
    low_value = values[(counted <= below[:, None]).sum(axis=1)]
    high_value = values[(counted <= above[:, None]).sum(axis=1)]
    result: NDArray[np.float64] = low_value + (high_value - low_value) * (position - below)
    return result
