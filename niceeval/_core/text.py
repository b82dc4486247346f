"""Text that may hold anything a Python `str` can, made fit to store, send or encode.

What a model, an agent or a tool returns may hold lone surrogates (`"\\ud800"`, which decoders produce from broken
input and which UTF-8 cannot encode). Every exit that encodes text (the store, the judge's prompt, the checkpoints
file, the JSON and JUnit reports) replaces each with U+FFFD, the way a lenient decoder would; everything else is
kept exactly.
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def has_surrogates(text: str) -> bool:
    """Whether `text` holds a lone surrogate (a valid pair never appears in a Python `str`)."""
    return _SURROGATE.search(text) is not None


def without_surrogates(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD."""
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
