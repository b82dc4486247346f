"""Adaptive repeats: run an eval a few times, then again only while its verdict is not yet clear.

`--runs auto` is `--runs 3..20`. After each run from the LOW-th on, the eval's Wilson interval decides: it is
clear when the interval lies wholly below the gate (`--min-pass-rate`, 1.0 by default: `high < gate`, the eval
fails and more runs cannot change that) or when its low end reaches the gate, or `1 - tolerated_flake_rate` if
that is lower (the eval passes, and a flake rate above the tolerated one would most likely have shown by now).
Otherwise it runs again, up to HIGH.

At the default gate of 1.0 (every run must pass) one miss decides the eval, and an eval that passes every run
is clear once the interval's upper bound on its failure rate is under the tolerated flake rate (0.2 by default:
16 passes in a row). Without a tolerated rate a run of passes could never be clear at that gate: no number of
passes proves that the next run passes, so every passing eval ran HIGH times and the runs saved all came from
failing ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._intervals import wilson

AUTO = (3, 20)
TOLERATED_FLAKE_RATE = 0.2
_RANGE = re.compile(r"^(\d+)\.\.(\d+)$")


@dataclass(frozen=True, kw_only=True)
class AdaptiveRuns:
    """Between `least` and `most` runs of each eval, stopping as soon as its verdict is clear.

    `tolerated_flake_rate`: the failure rate not worth more runs to find. An eval whose interval shows it fails
    less often than that is clear, even under a stricter gate (0 turns this off: a passing eval then runs
    `most` times at the default gate).
    """

    least: int
    most: int
    tolerated_flake_rate: float = TOLERATED_FLAKE_RATE

    def __post_init__(self) -> None:
        if not 1 <= self.least <= self.most:
            raise ValueError(f"{self}: the bounds need 1 <= LOW <= HIGH (e.g. 3..20)")
        if not 0 <= self.tolerated_flake_rate < 1:
            raise ValueError(
                f"the tolerated flake rate must be at least 0 and under 1 (e.g. 0.2), got {self.tolerated_flake_rate}"
            )

    def __str__(self) -> str:
        return f"{self.least}..{self.most}"

    def wants_more(self, passes: int, runs: int, *, gate: float, confidence: float = 0.95) -> bool:
        """Whether an eval with `passes` of `runs` should run again."""
        if runs < self.least:
            return True
        if runs >= self.most:
            return False
        interval = wilson(passes, runs, confidence=confidence)
        assert interval.low is not None and interval.high is not None
        high = 1.0 if passes >= runs else interval.high  # all passes: exactly 1 (the formula can round below)
        decided_fail = high < gate
        clear_pass = interval.low >= min(gate, 1 - self.tolerated_flake_rate)
        return not (decided_fail or clear_pass)


def parse_runs(text: str) -> int | AdaptiveRuns:
    """`N`, `auto` or `LOW..HIGH`; ValueError saying what to write instead."""
    text = text.strip()
    if text == "auto":
        return AdaptiveRuns(least=AUTO[0], most=AUTO[1])
    if text.isdigit():
        if int(text) < 1:
            raise ValueError(f"{text}: the number of runs must be at least 1")
        return int(text)
    match = _RANGE.match(text)
    if match is None:
        raise ValueError(f"{text!r}: write a number of runs (3), `auto`, or bounds like 3..20")
    return AdaptiveRuns(least=int(match[1]), most=int(match[2]))
