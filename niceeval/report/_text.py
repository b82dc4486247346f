"""Untrusted text made fit for each report format.

What a model or a tool returns may hold anything a Python `str` can: NUL and other control characters, terminal
escapes, and lone surrogates (`"\\ud800"`, which decoders produce from broken input and which UTF-8 cannot encode).
The rule, the same in every reporter: a character a format cannot hold becomes U+FFFD in data formats (JSON,
JUnit XML) and a visible escape (`\\x1b`, `\\ud800`) on the console; everything else is kept exactly.
"""

from __future__ import annotations

import re
from typing import Any

# Control characters (terminal escapes among them) and lone surrogates, which no terminal encoding can write.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
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


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def clean(text: str, limit: int = 400) -> str:
    """Untrusted text made safe for a terminal: control characters and lone surrogates escaped, length bounded."""
    more = f"... ({len(text) - limit} more chars)" if len(text) > limit else ""
    return _CONTROL.sub(_escape, text[:limit]) + more


def clean_lines(text: str, indent: str, limit: int) -> str:
    """Untrusted multi-line text: each line cleaned, continuation lines indented, the whole bounded."""
    more = f"... ({len(text) - limit} more chars)" if len(text) > limit else ""
    return ("\n" + indent).join(clean(line, limit) for line in text[:limit].split("\n")) + more
