"""How far two raters agree on pass/fail verdicts of the same items: a judge and its replacement, or a judge and
the human labels.

Agreement is the share of items given the same verdict, with its Wilson interval. Cohen's kappa is the agreement
beyond what chance gives two raters with these pass rates: `(p_o - p_e) / (1 - p_e)`, where `p_e` is the
agreement of two independent raters passing at the same rates; a judge that passes everything agrees 90% with
labels that are 90% pass, and its kappa is 0. The flips say which way the verdicts moved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._intervals import wilson
from ._results import Estimate


@dataclass(frozen=True, kw_only=True)
class Agreement:
    """Two raters' verdicts on the same items (True: pass), the first rater read as the reference."""

    items: int
    both_pass: int
    both_fail: int
    pass_to_fail: int
    """The first rater passed it, the second failed it."""
    fail_to_pass: int
    rate: Estimate
    """The share of items given the same verdict, with its Wilson interval (value None for no items)."""
    kappa: float | None
    """Cohen's kappa; None when it is undefined: no items, or both raters gave every item one same verdict."""

    @property
    def agreed(self) -> int:
        return self.both_pass + self.both_fail


def agreement(first: Sequence[bool], second: Sequence[bool], *, confidence: float = 0.95) -> Agreement:
    """Compare two raters' pass/fail verdicts, one pair per item."""
    if len(first) != len(second):
        raise ValueError(f"paired verdicts need one per item from each rater, got {len(first)} and {len(second)}")
    pairs = list(zip(first, second, strict=True))
    both_pass = sum(1 for a, b in pairs if a and b)
    both_fail = sum(1 for a, b in pairs if not a and not b)
    pass_to_fail = sum(1 for a, b in pairs if a and not b)
    return Agreement(
        items=len(pairs),
        both_pass=both_pass,
        both_fail=both_fail,
        pass_to_fail=pass_to_fail,
        fail_to_pass=len(pairs) - both_pass - both_fail - pass_to_fail,
        rate=wilson(both_pass + both_fail, len(pairs), confidence=confidence),
        kappa=cohen_kappa(first, second),
    )


def cohen_kappa(first: Sequence[bool], second: Sequence[bool]) -> float | None:
    """Cohen's kappa of two raters' pass/fail verdicts on the same items (None when undefined)."""
    if len(first) != len(second):
        raise ValueError(f"paired verdicts need one per item from each rater, got {len(first)} and {len(second)}")
    n = len(first)
    if n == 0:
        return None
    observed = sum(1 for a, b in zip(first, second, strict=True) if a == b) / n
    first_pass, second_pass = sum(map(bool, first)) / n, sum(map(bool, second)) / n
    chance = first_pass * second_pass + (1 - first_pass) * (1 - second_pass)
    if chance >= 1.0:
        return None
    return (observed - chance) / (1 - chance)
