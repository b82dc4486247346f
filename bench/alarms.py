"""The watcher's alarms simulated: false alarms and detection delays for each reference kind (docs/statistics.md).

Run by hand: `python bench/alarms.py`. The same seeded streams as `tests/online/test_alarms.py`: 200 streams of
5,000 pass/fail scores whose rate sits exactly at the reference's (false alarms), and 200 whose rate drops by 10
points at trace 2,000 (delays after the drop). The references: a target; a window (the first 2,000 scores of the
watch: the alarm compares the rest with its lower bound at alpha/2, by a monitor at alpha/2); a stored suite run of
5,000 scores at the same rate (likewise). Printed: one markdown row per reference kind and rate, with the share of
unchanged streams that ever alarmed (and its 95% Wilson interval), and the median and worst delay.
"""

from __future__ import annotations

import math

import numpy as np

from niceeval.stats import evidence_paths, mean_lower_bound, wilson

ALPHA = 0.05
STREAMS, LENGTH, DROP_AT, WINDOW, RUN = 200, 5_000, 2_000, 2_000, 5_000
NONE = 10**9


def _streams(rng: np.random.Generator, rate: float, length: int = LENGTH) -> np.ndarray:
    return (rng.random((STREAMS, length)) < rate).astype(float)


def _first(scores: np.ndarray, target: float | np.ndarray, alpha: float, offset: int = 0) -> np.ndarray:
    crossed = evidence_paths(scores[:, offset:], target) >= math.log(1 / alpha)
    return np.where(crossed.any(axis=1), crossed.argmax(axis=1) + offset, NONE)


def _bounds(references: np.ndarray) -> np.ndarray:
    return np.array([mean_lower_bound(list(row), ALPHA / 2) for row in references])


def _alarms(kind: str, rate: float, seed: int, drop: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    run = _bounds(_streams(rng, rate, RUN)) if kind == "run" else np.zeros(STREAMS)
    scores = _streams(rng, rate)
    if drop:
        scores[:, DROP_AT:] = _streams(rng, rate - 0.1, LENGTH - DROP_AT)
    if kind == "target":
        return _first(scores, rate, ALPHA)
    if kind == "window":
        return _first(scores, _bounds(scores[:, :WINDOW]), ALPHA / 2, offset=WINDOW)
    return _first(scores, run, ALPHA / 2)


def main() -> None:
    print("| reference | rate | any false alarm (95% CI) | alarmed after the drop | median delay | worst delay |")
    print("|---|---|---|---|---|---|")
    for kind, label in (("target", "target"), ("window", f"first {WINDOW:,}"), ("run", f"run of {RUN:,}")):
        for rate in (0.7, 0.8, 0.9):
            held = _alarms(kind, rate, 42, drop=False)
            false = int((held < NONE).sum())
            estimate = wilson(false, STREAMS)
            dropped = _alarms(kind, rate, 7, drop=True)
            late = dropped[(dropped >= DROP_AT) & (dropped < NONE)] - DROP_AT
            print(
                f"| {label} | {rate} | {false / STREAMS:.1%} ({estimate.low:.1%}-{estimate.high:.1%}) | {len(late)} "
                f"| {int(np.median(late)):,} | {int(late.max()):,} |"
            )


if __name__ == "__main__":
    main()
