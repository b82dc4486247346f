"""The paired cluster bootstrap's measures by a normal approximation, for comparisons too large to resample.

Above `BOOTSTRAP_CLUSTERS` shared clusters a bootstrap of `RESAMPLES` draws costs a `resamples x clusters` matrix
(2,000 x 100,000 cells: 1.6 GB, tens of seconds) while the central limit theorem has long made the resampled
changes normal. Each measure is then linearised (its influence per cluster, the delta method) and its interval
is `point +- t(1 - alpha/2, K - 1) * sd(influence) / sqrt(K)`: the expanded percentile interval of the bootstrap
converges to it (the expansion turns the bootstrap's plug-in spread into the sample one, and its z into t).

- A ratio of sums `R = sum(y) / sum(x)`: influence `(y_k - R x_k) / mean(x)`.
- A quantile `xi` of the values pooled over the clusters (Woodruff 1952, Francisco & Fuller 1991): the share of
  values at or below `xi` is a ratio of sums, influence `z_k = (c_k - q n_k) / mean(n)` (`c_k` of cluster k's `n_k`
  values are at or below `xi`); Woodruff's interval maps `q +- t * se(z)` back through the empirical quantile
  function, and its slope `(high - low) / (2 t se(z))` turns `z_k` into the quantile's own influence.
- A change (after minus before) is paired: the difference of the two sides' influences per cluster; a relative
  change `after / before - 1` has influence `(u_after - r u_before) / before` with `r = after / before`.

`tests/stats/test_normal.py` measures how far these intervals fall from the bootstrap's at the switch size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._bootstrap import PairedChange
from ._results import Estimate

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from ._bootstrap import Column

BOOTSTRAP_CLUSTERS = 5000
"""Up to this many clusters the bootstrap resamples; above it the normal approximation measures."""
METHOD = "normal approximation"


class NormalPaired:
    """The measures of `PairedResampler` (same arguments, same records) by the normal approximation over
    `clusters` clusters (at least 2)."""

    def __init__(self, clusters: int, *, confidence: float = 0.95) -> None:
        from ._intervals import t_quantile

        if clusters < 2:
            raise ValueError("a normal approximation needs at least two clusters")
        if not 0 < confidence < 1:
            raise ValueError(f"confidence must be between 0 and 1 (e.g. 0.95), got {confidence}")
        self.clusters = clusters
        self.resamples = 0
        self.confidence = confidence
        self._t = t_quantile(0.5 + confidence / 2, clusters - 1)

    def ratio(self, before: tuple[Column, Column], after: tuple[Column, Column]) -> PairedChange:
        """As `PairedResampler.ratio`: each side's ratio of sums, and the interval of its change."""
        (top_b, bottom_b), (top_a, bottom_a) = (self._column(v) for v in before), (self._column(v) for v in after)
        if bottom_b.sum() == 0 or bottom_a.sum() == 0:
            return PairedChange(
                before=None, after=None, difference=None, clusters=self.clusters, note="nothing to divide by",
                method=METHOD,
            )  # fmt: skip
        point_b, influence_b = _ratio(top_b, bottom_b)
        point_a, influence_a = _ratio(top_a, bottom_a)
        return self._change(point_b, point_a, influence_b, influence_a)

    def ratio_of(self, side: tuple[Column, Column]) -> Estimate:
        """As `PairedResampler.ratio_of`: one side's ratio of sums with its interval."""
        top, bottom = (self._column(v) for v in side)
        if bottom.sum() == 0:
            return Estimate(value=None, clusters=self.clusters, confidence=self.confidence, note="nothing to divide by")
        point, influence = _ratio(top, bottom)
        spread = self._t * _stderr(influence)
        return self._estimate(point, point - spread, point + spread)

    def quantiles(
        self, before: Sequence[Sequence[float]], after: Sequence[Sequence[float]], qs: Sequence[float]
    ) -> list[PairedChange]:
        """As `PairedResampler.quantiles`: each `q` quantile of the values pooled over the clusters on each side,
        and the interval of its change."""
        _check_quantiles(qs, [*before, *after])
        sides = [self._quantiles(before, qs), self._quantiles(after, qs)]
        return [self._change(sides[0][i][0], sides[1][i][0], sides[0][i][3], sides[1][i][3]) for i in range(len(qs))]

    def quantiles_of(self, groups: Sequence[Sequence[float]], qs: Sequence[float]) -> list[Estimate]:
        """As `PairedResampler.quantiles_of`: one side's quantiles, each with Woodruff's interval."""
        _check_quantiles(qs, groups)
        return [self._estimate(point, low, high) for point, low, high, _ in self._quantiles(groups, qs)]

    def _quantiles(
        self, groups: Sequence[Sequence[float]], qs: Sequence[float]
    ) -> list[tuple[float, float, float, NDArray[np.float64]]]:
        """Per `q`: the quantile, Woodruff's interval, and the quantile's influence per cluster."""
        import numpy as np

        if len(groups) != self.clusters:
            raise ValueError(f"{len(groups)} value lists for {self.clusters} clusters: give one per cluster")
        sizes = np.asarray([len(g) for g in groups], dtype=float)
        values = np.concatenate([np.asarray(g, dtype=float) for g in groups])
        owner = np.repeat(np.arange(self.clusters), sizes.astype(np.int64))
        ordered = np.sort(values)
        found = []
        for q in qs:
            point = float(np.quantile(ordered, q))
            below = np.bincount(owner, weights=(values <= point).astype(float), minlength=self.clusters)
            share = (below - q * sizes) / sizes.mean()
            reach = self._t * _stderr(share)
            low = float(np.quantile(ordered, max(0.0, q - reach)))
            high = float(np.quantile(ordered, min(1.0, q + reach)))
            slope = (high - low) / (2 * reach) if reach > 0 else 0.0
            found.append((point, low, high, -slope * (share - share.mean())))
        return found

    def _change(
        self,
        before: float,
        after: float,
        influence_b: NDArray[np.float64],
        influence_a: NDArray[np.float64],
    ) -> PairedChange:
        relative = after / before - 1 if before != 0 else (0.0 if after == 0 else None)
        spread = self._t * _stderr(influence_a - influence_b)
        change = PairedChange(
            before=before, after=after, difference=after - before, low=after - before - spread,
            high=after - before + spread, relative=relative, clusters=self.clusters, resamples=0,
            confidence=self.confidence, method=METHOD,
        )  # fmt: skip
        if relative is None or before == 0:
            return change
        reach = self._t * _stderr((influence_a - (after / before) * influence_b) / before)
        return PairedChange(
            before=change.before, after=change.after, difference=change.difference, low=change.low,
            high=change.high, relative=relative, relative_low=relative - reach, relative_high=relative + reach,
            clusters=change.clusters, resamples=0, confidence=change.confidence, method=METHOD,
        )  # fmt: skip

    def _estimate(self, value: float, low: float, high: float) -> Estimate:
        return Estimate(
            value=value, low=low, high=high, n=self.clusters, clusters=self.clusters, confidence=self.confidence,
            note=f"{METHOD} over {self.clusters:,} clusters",
        )  # fmt: skip

    def _column(self, values: Column) -> NDArray[np.float64]:
        import numpy as np

        if len(values) != self.clusters:
            raise ValueError(f"{len(values)} values for {self.clusters} clusters: give one per cluster")
        return np.asarray(values, dtype=float)


def _ratio(top: NDArray[np.float64], bottom: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
    """`sum(top) / sum(bottom)` and its influence per cluster."""
    point = float(top.sum() / bottom.sum())
    influence: NDArray[np.float64] = (top - point * bottom) / bottom.mean()
    return point, influence


def _stderr(influence: NDArray[np.float64]) -> float:
    """The standard error of a mean of `influence` over its clusters (the sample standard deviation)."""
    return float(influence.std(ddof=1)) / math.sqrt(len(influence))


def _check_quantiles(qs: Sequence[float], groups: Sequence[Sequence[float]]) -> None:
    if any(not 0 <= q <= 1 for q in qs):
        raise ValueError(f"a quantile is between 0 and 1, got {list(qs)}")
    if any(not values for values in groups):
        raise ValueError("every cluster needs at least one value")
