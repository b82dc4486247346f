"""Untrusted text made fit for each report format.

What a model or a tool returns may hold anything a Python `str` can: NUL and other control characters, terminal
escapes, and lone surrogates (`"\\ud800"`, which decoders produce from broken input and which UTF-8 cannot encode).
The rule, the same in every reporter: a character a format cannot hold becomes U+FFFD in data formats (JSON,
JUnit XML) and a visible escape (`\\x1b`, `\\ud800`) on the console; everything else is kept exactly.
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def without_surrogates(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (a valid pair never appears in a Python `str`)."""
    return _SURROGATE.sub(REPLACEMENT, text)


def scrub(value: Any) -> Any:
    """A JSON-ready value (dicts, lists, strings, numbers) with lone surrogates replaced in every string and key."""
    if isinstance(value, str):
        return without_surrogates(value)
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v) for v in value]
    return value
