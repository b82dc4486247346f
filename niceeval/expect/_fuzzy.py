"""Edit-distance matchers: `similarity` and `levenshtein`, on rapidfuzz.

Apart from the other matchers because rapidfuzz takes longer to import than any of them (bench/NOTES.md,
"Start-up"): `niceeval.expect` loads this module when one of its names is first asked for, which an eval file's
`from niceeval.expect import similarity` does as discovery imports it, before the suite's loop starts.
"""

from __future__ import annotations

from typing import Any

from rapidfuzz.distance import Levenshtein

from niceeval._core.assertion import SOFT_DEFAULT_THRESHOLD, Matcher, ScoreLike, Verdict
from niceeval._core.errors import UsageError
from niceeval._core.values import short
from niceeval.expect._text import not_text


def similarity(expected: str) -> Matcher:
    """Score how close a string is to `expected` (normalized Levenshtein, 0..1). Soft, threshold 0.8."""
    if not isinstance(expected, str):
        raise UsageError(
            f"similarity() compares text and takes a string, got {type(expected).__name__} {short(expected)}. "
            "To compare other values use equals()."
        )

    def score(value: Any) -> ScoreLike:
        if not isinstance(value, str):
            return Verdict(0.0, f"expected a string, got {type(value).__name__}", actual=short(value))
        ratio = Levenshtein.normalized_similarity(expected, value)
        return Verdict(ratio, f"similarity {ratio:.2f}", actual=short(value))

    return Matcher(
        name="similarity",
        score_fn=score,
        severity="soft",
        threshold=SOFT_DEFAULT_THRESHOLD,
        expected=short(expected),
    )


def levenshtein(expected: str, *, max_distance: int) -> Matcher:
    """Pass when the text is at most `max_distance` edits (insertions, deletions, substitutions) from `expected`."""
    if not isinstance(expected, str):
        raise UsageError(f"levenshtein() compares text and takes a string, got {short(expected)}.")
    if isinstance(max_distance, bool) or not isinstance(max_distance, int) or max_distance < 0:
        raise UsageError(f"levenshtein(max_distance=...) is a whole number of edits >= 0, got {max_distance!r}.")

    def score(value: Any) -> ScoreLike:
        if (wrong := not_text(value)) is not None:
            return wrong
        distance = Levenshtein.distance(expected, value)
        if distance <= max_distance:
            return Verdict(True, f"{distance} edits")
        return Verdict(False, f"{distance} edits > {max_distance}", actual=short(value))

    return Matcher(
        name=f"levenshtein({short(expected)}, max_distance={max_distance})",
        score_fn=score,
        expected=f"within {max_distance} edits of {short(expected)}",
    )


def edit_distance(expected: str, value: str) -> int:
    """Edits (insertions, deletions, substitutions) from `expected` to `value`."""
    return int(Levenshtein.distance(expected, value))
