"""Readable renderings and differences of arbitrary values, for failure reasons."""

from __future__ import annotations

import dataclasses
import difflib
import reprlib
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

_repr = reprlib.Repr()
_repr.maxstring = 160
_repr.maxother = 160
_repr.maxlist = 12
_repr.maxdict = 12
_repr.maxlevel = 4

_MAX_DIFFERENCES = 20


def short(value: object) -> str:
    """A bounded repr of any value (never huge, never raises)."""
    try:
        return _repr.repr(value)
    except Exception:
        return f"<{type(value).__name__}>"


def _plain(value: object) -> object:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="python")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def describe_difference(expected: object, actual: object) -> list[str]:
    """Every place where `actual` differs from `expected`, as `path: expected X, got Y` lines (empty: equal)."""
    if type(expected) is not type(actual):
        expected, actual = _plain(expected), _plain(actual)
    out: list[str] = []
    _walk(expected, actual, "$", out)
    if len(out) > _MAX_DIFFERENCES:
        out = [*out[:_MAX_DIFFERENCES], f"... and {len(out) - _MAX_DIFFERENCES} more differences"]
    return out


def _walk(expected: Any, actual: Any, path: str, out: list[str]) -> None:
    if len(out) > _MAX_DIFFERENCES:
        return
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        _walk_mapping(expected, actual, path, out)
    elif _is_sequence(expected) and _is_sequence(actual) and type(expected) is type(actual):
        for index, (e, a) in enumerate(zip(expected, actual, strict=False)):
            _walk(e, a, f"{path}[{index}]", out)
        if len(expected) != len(actual):
            out.append(f"{path}: expected {len(expected)} items, got {len(actual)}")
    elif isinstance(expected, str) and isinstance(actual, str) and "\n" in expected + actual:
        if expected != actual:
            lines = difflib.unified_diff(
                expected.splitlines(), actual.splitlines(), "expected", "actual", lineterm="", n=1
            )
            out.append(f"{path}: text differs\n" + "\n".join(list(lines)[:40]))
    elif not _same(expected, actual):
        out.append(f"{path}: expected {short(expected)}, got {short(actual)}")


def _walk_mapping(expected: Mapping[Any, Any], actual: Mapping[Any, Any], path: str, out: list[str]) -> None:
    for key in expected:
        if key not in actual:
            out.append(f"{path}.{key}: missing (expected {short(expected[key])})")
        else:
            _walk(expected[key], actual[key], f"{path}.{key}", out)
    for key in actual:
        if key not in expected:
            out.append(f"{path}.{key}: unexpected key (got {short(actual[key])})")


def _is_sequence(value: object) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def _same(expected: object, actual: object) -> bool:
    # True == 1 in Python, but a deep-equality check on data should tell a flag from a count.
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    try:
        return bool(expected == actual)
    except Exception:
        return False
