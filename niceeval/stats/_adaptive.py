"""Adaptive repeats: run an eval a few times, then again only while its pass-rate interval straddles the gate.

`--runs auto` is `--runs 3..20`. An eval stops at the lower bound when its Wilson interval already lies on one
side of the gate (`--min-pass-rate`, 1.0 by default), and otherwise repeats until it does or the upper bound is
hit. The interval clears the gate when it lies wholly below it (`high < gate`: the eval fails) or wholly at or
above it (`low >= gate`: it passes); otherwise it straddles (`low < gate <= high`). At the default gate of 1.0
an eval with a failure has `high < 1` and stops (more runs cannot make it pass), while one with only passes
keeps `high == 1 > low` and repeats up to the upper bound: passes never prove 100%, and only more runs can
reveal a flake. So at gate 1.0 the runs saved come from the failing evals; a gate below 1 lets a run of passes
clear it too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._intervals import wilson

AUTO = (3, 20)
_RANGE = re.compile(r"^(\d+)\.\.(\d+)$")


@dataclass(frozen=True, kw_only=True)
class AdaptiveRuns:
    """Between `least` and `most` runs of each eval, stopping as soon as its verdict is clear."""

    least: int
    most: int

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
        return interval.low < gate <= high


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
    least, most = int(match[1]), int(match[2])
    if least < 1 or least > most:
        raise ValueError(f"{text}: the bounds need 1 <= LOW <= HIGH (e.g. 3..20)")
    return AdaptiveRuns(least=least, most=most)
