"""Text that may hold anything a Python `str` can, made fit to store, send, encode or show on a terminal.

What a model, an agent or a tool returns may hold lone surrogates (`"\\ud800"`, which decoders produce from broken
input and which UTF-8 cannot encode). Every exit that encodes text (the store, the judge's prompt, the checkpoints
file, the JSON and JUnit reports) replaces each with U+FFFD, the way a lenient decoder would; the store replaces NUL
characters too (PostgreSQL's text cannot hold one, and both databases keep the same text); everything else is kept
exactly. Bytes that are not UTF-8 (an agent's raw reply), which no JSON encoder can write, become text with each
bad byte as an escape (`b"\\xff ok"` -> `"\\xff ok"`, `as_text`). What is printed to a terminal (the console
report, `niceeval show`, `diff`, `calibrate`) goes through `clean` instead: control characters, terminal escapes
and lone surrogates become visible escapes (`\\x1b`, `\\ud800`, `\\u202e`).
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
# Control characters (terminal escapes among them), lone surrogates, which no terminal encoding can write, and the
# bidirectional controls (U+202E and kin), which make a terminal show text in another order than it is (`evil.py`
# shown as `yp.live`: the "Trojan Source" trick).
_TERMINAL_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_SURROGATE_OR_NUL = re.compile("[\ud800-\udfff\x00]")
REPLACEMENT = "\ufffd"


def has_surrogates(text: str) -> bool:
    """Whether `text` holds a lone surrogate (a valid pair never appears in a Python `str`)."""
    return _SURROGATE.search(text) is not None


def without_surrogates(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD."""
    return _SURROGATE.sub(REPLACEMENT, text)


def scrub(value: Any, *, nul: bool = False) -> Any:
    """A JSON-ready value (dicts, lists, strings, numbers) with lone surrogates replaced in every string and key.

    `nul`: NUL characters too (the store's rule on every database: PostgreSQL's text cannot hold one).
    """
    return _scrub(value, _SURROGATE_OR_NUL if nul else _SURROGATE)


def _scrub(value: Any, pattern: re.Pattern[str]) -> Any:
    if isinstance(value, str):
        return pattern.sub(REPLACEMENT, value)
    if isinstance(value, dict):
        return {_scrub(k, pattern): _scrub(v, pattern) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v, pattern) for v in value]
    return value


def as_text(value: Any) -> Any:
    """`value` with every `bytes` in it (through dicts, lists and tuples) decoded as UTF-8, each byte that is not
    UTF-8 kept as a `\\xNN` escape: what the reports and the store can encode."""
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "backslashreplace")
    if isinstance(value, dict):
        return {as_text(k): as_text(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [as_text(v) for v in value]
    return value


def clean(text: str, limit: int = 400) -> str:
    """Untrusted text made safe for a terminal: control, bidi and lone surrogate characters escaped, length bounded."""
    more = f"... ({len(text) - limit} more chars)" if len(text) > limit else ""
    return _TERMINAL_UNSAFE.sub(_escape, text[:limit]) + more


def clean_lines(text: str, indent: str, limit: int) -> str:
    """Untrusted multi-line text: each line cleaned, continuation lines indented, the whole bounded."""
    more = f"... ({len(text) - limit} more chars)" if len(text) > limit else ""
    return ("\n" + indent).join(clean(line, limit) for line in text[:limit].split("\n")) + more


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
