"""Value matchers: numeric comparisons, truth, order, deep-partial JSON.

The comparisons are spelled `is_at_least`, `is_at_most`, `is_greater_than`, `is_less_than`, `is_close_to`:
`.at_least(x)` is already the chain on every matcher (a threshold on its *score*), and a bare `at_least(3)`
beside `similarity(x).at_least(0.7)` would read as the same thing while meaning another. With `is_` they read
as the sentence they check (`t.check(turn.usage.cost, is_at_most(0.01))`) and sit with `is_true`, `is_none`.
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from niceeval._core.assertion import Matcher, ScoreLike, Verdict
from niceeval._core.errors import UsageError
from niceeval._core.toolmatch import check_spec, partial_misses
from niceeval._core.values import short


def _number(fn: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise UsageError(f"{fn}() compares numbers and takes one, got {short(value)}.")
    return float(value)


def _compare(fn: str, bound: float, symbol: str, holds: Callable[[float, float], bool]) -> Matcher:
    limit = _number(fn, bound)

    def score(value: Any) -> ScoreLike:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return Verdict(False, f"expected a number, got {type(value).__name__}", actual=short(value))
        if holds(value, limit):
            return True
        return Verdict(False, f"{short(value)} is not {symbol} {bound!r}", actual=short(value))

    return Matcher(name=f"{fn}({bound!r})", score_fn=score, expected=f"{symbol} {bound!r}")


def is_at_least(bound: float) -> Matcher:
    """Pass when the value is a number >= `bound`. (Not `.at_least(x)`, the score threshold every matcher has.)"""
    return _compare("is_at_least", bound, ">=", operator.ge)


def is_at_most(bound: float) -> Matcher:
    """Pass when the value is a number <= `bound`."""
    return _compare("is_at_most", bound, "<=", operator.le)


def is_greater_than(bound: float) -> Matcher:
    """Pass when the value is a number > `bound`."""
    return _compare("is_greater_than", bound, ">", operator.gt)


def is_less_than(bound: float) -> Matcher:
    """Pass when the value is a number < `bound`."""
    return _compare("is_less_than", bound, "<", operator.lt)


def is_close_to(expected: float, tolerance: float = 1e-9) -> Matcher:
    """Pass when the value is a number within `tolerance` (absolute) of `expected`."""
    target, tol = _number("is_close_to", expected), _number("is_close_to", tolerance)
    if tol < 0:
        raise UsageError(f"is_close_to() takes a tolerance >= 0, got {tolerance!r}.")

    def score(value: Any) -> ScoreLike:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return Verdict(False, f"expected a number, got {type(value).__name__}", actual=short(value))
        off = abs(value - target)
        if off <= tol:
            return True
        return Verdict(
            False, f"{short(value)} is {off:g} away from {expected!r} (tolerance {tolerance!r})", actual=short(value)
        )

    return Matcher(
        name=f"is_close_to({expected!r}, {tolerance!r})", score_fn=score, expected=f"{expected!r} ± {tolerance!r}"
    )


def _identity(name: str, wanted: object, description: str) -> Matcher:
    def score(value: Any) -> ScoreLike:
        if value is wanted:
            return True
        return Verdict(False, f"expected {description}, got {type(value).__name__} {short(value)}", actual=short(value))

    return Matcher(name=name, score_fn=score, expected=description)


def is_true() -> Matcher:
    """Pass when the value is `True` itself (not merely truthy: `"no"` and `1` miss)."""
    return _identity("is_true", True, "True")


def is_false() -> Matcher:
    """Pass when the value is `False` itself (not merely falsy: `""` and `0` miss)."""
    return _identity("is_false", False, "False")


def is_not_none() -> Matcher:
    """Pass when the value is anything but `None`."""

    def score(value: Any) -> ScoreLike:
        return True if value is not None else Verdict(False, "the value is None", actual="None")

    return Matcher(name="is_not_none", score_fn=score, expected="not None")


def _subsequence_misses(wanted: Sequence[Any], value: Any) -> str | None:
    """Why `wanted` is not in order in `value` (None: it is)."""
    if isinstance(value, str):
        at, previous = 0, None
        for item in wanted:
            found = value.find(item, at) if isinstance(item, str) else -1
            if found < 0:
                return f"{short(item)} not found" + ("" if previous is None else f" after {short(previous)}")
            at, previous = found + len(item), item
        return None
    if not isinstance(value, list | tuple):
        return f"expected a string or a list, got {type(value).__name__}"
    position = 0
    for item in wanted:
        while position < len(value) and value[position] != item:
            position += 1
        if position == len(value):
            return f"{short(item)} not found in order"
        position += 1
    return None


def in_order(items: Sequence[Any]) -> Matcher:
    """Pass when `items` appear in this order in the value (a list, or substrings of a text); others may come
    between."""
    if isinstance(items, str) or not isinstance(items, Sequence) or not items:
        raise UsageError(f"in_order() takes a non-empty list, e.g. in_order(['greet', 'answer']); got {short(items)}.")
    wanted = list(items)

    def score(value: Any) -> ScoreLike:
        miss = _subsequence_misses(wanted, value)
        return True if miss is None else Verdict(False, miss, actual=short(value))

    return Matcher(name=f"in_order({short(wanted)})", score_fn=score, expected=" then ".join(map(short, wanted)))


def json_includes(partial: Mapping[str, Any] | Sequence[Any]) -> Matcher:
    """Pass when the value (a dict or list, or JSON text) deep-partially matches `partial`, in the language of
    tool inputs: every given key must match; values may be compiled regexes, predicates or nested dicts; a list
    matches a list of the same length item by item. A miss lists each path that differs."""
    if not isinstance(partial, Mapping | list | tuple):
        raise UsageError(f"json_includes() takes a dict or a list (the partial JSON), got {short(partial)}.")
    check_spec(partial if isinstance(partial, Mapping) else None, "json_includes()")

    def score(value: Any) -> ScoreLike:
        data = value
        if isinstance(value, str | bytes):
            try:
                data = json.loads(value)
            except ValueError:
                return Verdict(False, "the value is text but not valid JSON", actual=short(value))
        elif hasattr(value, "model_dump"):
            data = value.model_dump(mode="json")
        misses = partial_misses(partial, data)
        return True if not misses else Verdict(False, "\n".join(misses[:20]), actual=short(value))

    return Matcher(name=f"json_includes({short(partial)})", score_fn=score, expected=f"JSON including {short(partial)}")
