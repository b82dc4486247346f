"""Sequential tests of a stream's mean that stay valid however long it is watched (the watcher's alarms).

The evidence that a stream of scores `x` in [0, 1] has a mean below `target` is the wealth of a bettor who bets, at
fixed stakes λ, that each score falls below it: `Π (1 + λ (target - x))`. While the mean is at least the target
this is a nonnegative supermartingale (Waudby-Smith and Ramdas, "Estimating means of bounded random variables by
betting", 2023), and so is any average of such wealths with weights that sum to at most 1. By Ville's inequality
the chance that the average EVER reaches `1/alpha` is then at most alpha, on an unbounded stream.

The average here runs over two things. Over 7 stakes (`BET_FRACTIONS`): small ones win on small drops over long
streams, large ones on large drops quickly. And over start times (an e-detector in the sense of Shin, Ramdas and
Rinaldo, 2024): a bettor starts afresh every `RESTART_EVERY` scores, the k-th with weight `1 / ((k + 1) (k + 2))`
(the weights sum to 1, so Ville still holds for the chance of ANY false alarm, unlike Shiryaev-Roberts' equal
weights). A bettor who started after a long stretch at the target has not lost to it, so a late drop shows about
as fast as an early one; the price is the log of the weight, about 2 log k, paid by the bettors that start late.

`mean_lower_bound` is the fixed-sample bound a reference (a window of scores, a stored suite run) is compared with.

Design: docs/design/online.md
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

BET_FRACTIONS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64)
"""The stakes, as fractions of the largest the target allows (`1 / (1 - target)`)."""
RESTART_EVERY = 100
"""Scores between two fresh bettors."""


def bets(target: float) -> np.ndarray:
    """The stakes for `target`."""
    import numpy as np

    return np.asarray(BET_FRACTIONS) / (1.0 - target)


def log_restart_weight(k: int) -> float:
    """The log of the k-th fresh bettor's weight (k = 0 starts with the stream)."""
    return -math.log((k + 1) * (k + 2))


def evidence_paths(scores: np.ndarray, target: float | np.ndarray) -> np.ndarray:
    """The log of the evidence after each score, for each stream (rows of `scores`, values in [0, 1]); `target`
    is one for all streams or one per stream. Agrees with `DriftMonitor` fed the same scores one at a time."""
    import numpy as np

    streams = np.atleast_2d(np.asarray(scores, dtype=float))
    targets = np.broadcast_to(np.asarray(target, dtype=float), (streams.shape[0],))
    stakes = np.asarray(BET_FRACTIONS)[:, None] / (1.0 - targets[None, :])
    steps = np.log1p(stakes[:, :, None] * (targets[None, :, None] - streams[None, :, :]))
    paths = np.empty_like(steps)
    wealth = np.full(steps.shape[:2], -np.inf)
    for k, start in enumerate(range(0, streams.shape[1], RESTART_EVERY)):
        block = slice(start, start + RESTART_EVERY)
        opened = np.logaddexp(wealth, log_restart_weight(k))
        paths[:, :, block] = opened[:, :, None] + np.cumsum(steps[:, :, block], axis=2)
        wealth = paths[:, :, block][:, :, -1]
    peak = paths.max(axis=0)
    result: np.ndarray = peak + np.log(np.exp(paths - peak).mean(axis=0))
    return result


class DriftMonitor:
    """The test of one stream against `target`, fed one score at a time (constant memory: one wealth per stake,
    the sum over the bettors started so far)."""

    def __init__(self, target: float, alpha: float) -> None:
        import numpy as np

        self.target = target
        self.alpha = alpha
        self.count = 0
        self.total = 0.0
        self._bets = bets(target)
        self._log_wealth = np.full(len(self._bets), -np.inf)

    def update(self, score: float) -> bool:
        """Count `score`; whether the evidence now reaches `1 / alpha`."""
        import numpy as np

        if self.count % RESTART_EVERY == 0:
            self._log_wealth = np.logaddexp(self._log_wealth, log_restart_weight(self.count // RESTART_EVERY))
        self._log_wealth += np.log1p(self._bets * (self.target - score))
        self.count += 1
        self.total += score
        return self.log_evidence >= math.log(1.0 / self.alpha)

    @property
    def log_evidence(self) -> float:
        """The log of the evidence (an e-value: the average wealth)."""
        if self.count == 0:
            return 0.0
        peak = float(self._log_wealth.max())
        return peak + math.log(float(sum(math.exp(w - peak) for w in self._log_wealth)) / len(self._log_wealth))

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else math.nan


def mean_lower_bound(scores: Sequence[float], alpha: float) -> float:
    """A lower confidence bound, at level `1 - alpha`, for the mean of `scores` in [0, 1] taken as one sample.

    Pass/fail scores (all 0 or 1) get the exact Clopper-Pearson bound; other scores Hoeffding's, which holds for
    any distribution on [0, 1] (wider: it cannot use the variance). No scores bound nothing: 0.
    """
    count = len(scores)
    if count == 0:
        return 0.0
    total = float(sum(scores))
    if all(score in (0.0, 1.0) for score in scores):
        if total == 0:
            return 0.0
        from scipy.stats import beta

        return float(beta.ppf(alpha, total, count - total + 1))
    return max(0.0, total / count - math.sqrt(math.log(1.0 / alpha) / (2.0 * count)))
