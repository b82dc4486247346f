"""The tool matching mini-language shared by `called_tool`, `not_called_tool` and `event(data=...)`.

`input` may be a dict (deep partial match: every given key must match; values may themselves be compiled
regexes, predicates or nested dicts), a compiled regex (searched in the serialised input), or a predicate.

A regex is searched in the input serialised as JavaScript's `JSON.stringify` would write it: compact (no spaces
after `,` and `:`), keys in the order the agent gave them, non-ASCII characters as they are. So
`re.compile(r'"command":"pwd"')` matches `{"command": "pwd"}` the same way in niceeval and in the TypeScript DSL.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from niceeval._core.errors import UsageError, user_location
from niceeval._core.values import short

InputSpec = Mapping[str, Any] | re.Pattern[str] | Callable[[Any], bool]


def check_spec(spec: object, where: str) -> None:
    """Reject what the mini-language does not understand, where it was written."""
    if spec is None or isinstance(spec, Mapping | re.Pattern) or callable(spec):
        return
    raise UsageError(
        f"{where}: input= takes a dict (partial match), a compiled regex (re.compile(...)) or a function; "
        f"got {short(spec)}."
    )


def serialise(value: object) -> str:
    """The text a regex input spec is searched in: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


class PredicateError(Exception):
    """A user's predicate raised: the assertion using it fails loudly, naming the predicate's line."""


def call_predicate(predicate: Callable[[Any], Any], value: object) -> bool:
    """`bool(predicate(value))`; an exception in it becomes a `PredicateError` naming its file:line."""
    try:
        return bool(predicate(value))
    except Exception as exc:
        name = getattr(predicate, "__name__", "predicate")
        where = user_location(exc.__traceback__)
        at = f" at {where}" if where else ""
        raise PredicateError(f"your predicate {name}{at} raised {type(exc).__name__}: {exc}") from exc


def input_matches(spec: InputSpec | None, value: object) -> bool:
    """Whether `value` satisfies `spec` (None matches anything). A predicate that raises fails loudly."""
    if spec is None:
        return True
    if isinstance(spec, re.Pattern):
        return spec.search(serialise(value)) is not None
    if isinstance(spec, Mapping):
        return not partial_misses(spec, value)
    return call_predicate(spec, value)


def partial_misses(expected: object, actual: object, path: str = "$") -> list[str]:
    """Where `actual` fails the deep partial match `expected`, one line per path (empty: it matches).

    A dict matches when every given key matches; a list matches a list of the same length item by item; a
    compiled regex is searched in the value serialised; a function is a predicate; anything else must be equal.
    """
    if isinstance(expected, re.Pattern):
        if expected.search(serialise(actual)) is not None:
            return []
        return [f"{path}: {short(actual)} does not match /{expected.pattern}/"]
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return [f"{path}: expected an object, got {short(actual)}"]
        misses: list[str] = []
        for key, value in expected.items():
            if key not in actual:
                misses.append(f"{path}.{key}: missing")
            else:
                misses.extend(partial_misses(value, actual[key], f"{path}.{key}"))
        return misses
    if isinstance(expected, list | tuple) and isinstance(actual, list | tuple):
        if len(expected) != len(actual):
            return [f"{path}: expected {len(expected)} items, got {len(actual)}: {short(actual)}"]
        return [
            m
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for m in partial_misses(e, a, f"{path}[{i}]")
        ]
    if callable(expected) and not isinstance(expected, type):
        return [] if call_predicate(expected, actual) else [f"{path}: {short(actual)} fails the predicate"]
    return [] if expected == actual else [f"{path}: expected {short(expected)}, got {short(actual)}"]


def render_spec(spec: InputSpec | None) -> str:
    """The spec as shown in a failure reason."""
    if spec is None:
        return "any input"
    if isinstance(spec, re.Pattern):
        return f"input matching /{spec.pattern}/"
    if isinstance(spec, Mapping):
        shown = {k: f"/{v.pattern}/" if isinstance(v, re.Pattern) else v for k, v in spec.items()}
        return f"input containing {short(shown)}"
    return f"input satisfying {getattr(spec, '__name__', 'a predicate')}"
