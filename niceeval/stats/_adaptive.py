"""Adaptive repeats: run an eval a few times, then again only while its pass-rate interval straddles the gate.

`--runs auto` is `--runs 3..10`. An eval stops at the lower bound when its Wilson interval already lies on one
side of the gate (`--min-pass-rate`, 1.0 by default), and otherwise repeats until it does or the upper bound is
hit. "Straddles" is strict (`low < gate < high`): with the default gate of 1.0 no interval straddles it (a
failure fails the eval for good, and passes can never prove 100%), so every eval stops at the lower bound.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._intervals import wilson

AUTO = (3, 10)
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
        return interval.low < gate < interval.high


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
