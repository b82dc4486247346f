"""Readable renderings and differences of arbitrary values, for failure reasons.

Every shortened rendering is scrubbed whole first (`clean_text`): cut in the middle, an AWS key or a database URL's
password no longer matches a pattern the redactor knows, and a fragment of it would reach every report.
"""

from __future__ import annotations

import builtins
import dataclasses
import difflib
import re
import reprlib
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from niceeval._core.redact import clean_text

_MAX_DIFFERENCES = 20
_FILL = "..."


class _Shortener(reprlib.Repr):
    """reprlib's bounded repr, each string and each object's repr scrubbed whole before it is cut."""

    def repr_str(self, x: str, level: int) -> str:
        return super().repr_str(clean_text(x), level)

    def repr_instance(self, x: object, level: int) -> str:
        try:
            shown = clean_text(builtins.repr(x))
        except Exception:
            return f"<{type(x).__name__}>"
        return _middle_cut(shown, self.maxother)


_repr = _Shortener()
_repr.maxstring = 160
_repr.maxother = 160
_repr.maxlist = 12
_repr.maxdict = 12
_repr.maxlevel = 4


def _middle_cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    start = max(0, (limit - len(_FILL)) // 2)
    end = max(0, limit - len(_FILL) - start)
    return text[:start] + _FILL + text[len(text) - end :]


def short(value: object) -> str:
    """A bounded repr of any value (never huge, never raises), its text scrubbed of secrets before any cut."""
    try:
        return _repr.repr(value)
    except Exception:
        return f"<{type(value).__name__}>"


def head(text: str, limit: int) -> str:
    """`text` when it fits in `limit` characters, else the first `limit` characters of it scrubbed whole."""
    return text if len(text) <= limit else clean_text(text)[:limit]


def tail(text: str, limit: int) -> str:
    """`text` when it fits in `limit` characters, else the last `limit` characters of it scrubbed whole."""
    return text if len(text) <= limit else clean_text(text)[-limit:]


STREAM_MARGIN = 1024
"""Bytes a capped stream keeps past its cap: no credential is longer, so one the cap cuts is whole when scrubbed."""
_UP_TO_LAST_SPACE = re.compile(r".*\s", re.DOTALL)
_FIRST_WORD = re.compile(r"\S*")


def head_of_stream(text: str, limit: int, *, cut: bool) -> str:
    """`head(text, limit)` of a stream's start kept `STREAM_MARGIN` past its cap. When the margin's end `cut` the
    stream, it may have cut a credential (which holds no whitespace): the last word goes first."""
    if cut:
        window = text[-STREAM_MARGIN:]
        kept = _UP_TO_LAST_SPACE.match(window)
        text = text[: len(text) - len(window) + (kept.end() if kept else 0)]
    return head(text, limit)


def tail_of_stream(text: str, limit: int, *, cut: bool) -> str:
    """`tail(text, limit)` of a stream's end kept `STREAM_MARGIN` before its cap. When the margin's start `cut` the
    stream, it may have cut a credential: the first word goes first."""
    if cut:
        word = _FIRST_WORD.match(text[:STREAM_MARGIN])
        text = text[word.end() if word else 0 :]
    return tail(text, limit)


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
