"""Untrusted text made fit for each report format.

What a model or a tool returns may hold anything a Python `str` can: NUL and other control characters, terminal
escapes, and lone surrogates (`"\\ud800"`, which decoders produce from broken input and which UTF-8 cannot encode).
The rule, the same in every reporter: a character a format cannot hold becomes U+FFFD in data formats (JSON,
JUnit XML) and a visible escape (`\\x1b`, `\\ud800`, `\\u202e`) on the console; everything else is kept exactly.
"""

from __future__ import annotations

import re

from niceeval._core.text import REPLACEMENT, scrub, without_surrogates

__all__ = ["REPLACEMENT", "clean", "clean_lines", "scrub", "without_surrogates"]

# Control characters (terminal escapes among them), lone surrogates, which no terminal encoding can write, and the
# bidirectional controls (U+202E and kin), which make a terminal show text in another order than it is (`evil.py`
# shown as `yp.live`: the "Trojan Source" trick).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def clean(text: str, limit: int = 400) -> str:
    """Untrusted text made safe for a terminal: control, bidi and lone surrogate characters escaped, length bounded."""
    more = f"... ({len(text) - limit} more chars)" if len(text) > limit else ""
    return _CONTROL.sub(_escape, text[:limit]) + more


def clean_lines(text: str, indent: str, limit: int) -> str:
    """Untrusted multi-line text: each line cleaned, continuation lines indented, the whole bounded."""
    more = f"... ({len(text) - limit} more chars)" if len(text) > limit else ""
    return ("\n" + indent).join(clean(line, limit) for line in text[:limit].split("\n")) + more
