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

from niceeval._core.errors import UsageError
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


def input_matches(spec: InputSpec | None, value: object) -> bool:
    """Whether `value` satisfies `spec` (None matches anything)."""
    if spec is None:
        return True
    if isinstance(spec, re.Pattern):
        return spec.search(serialise(value)) is not None
    if isinstance(spec, Mapping):
        return _partial(spec, value)
    try:
        return bool(spec(value))
    except Exception:
        return False


def _partial(expected: object, actual: object) -> bool:
    if isinstance(expected, re.Pattern):
        return expected.search(serialise(actual)) is not None
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return False
        return all(key in actual and _partial(value, actual[key]) for key, value in expected.items())
    if callable(expected) and not isinstance(expected, type):
        try:
            return bool(expected(actual))
        except Exception:
            return False
    return bool(expected == actual)


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
