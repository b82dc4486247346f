"""Secrets never reach a report: API keys and tokens are replaced in every run before any sink sees it.

A provider's error may quote the key it was given, an agent may echo its environment, a tool may print a token.
The runner redacts each finished run (and each load problem) once, so the console, the JSON, JUnit and HTML
reports, the GitHub step summary and the results store all get the same clean record. Two nets, one redactor:

- known secrets: the values of environment variables named like keys, tokens or passwords, and what an agent
  adapter was given in code (`api_key=`, an auth header), replaced by `[redacted:NAME]`;
- credential-shaped text no one declared: `Bearer ...`, `sk-proj-...`, AKIA keys, `x-api-key: ...`, `token=...`
  (also in URLs: `?access_token=`), the password of a database URL, and any field named like a credential,
  replaced by `[redacted]`. After a keyword the value must look like a credential (8 or more characters that are
  not words or a number: `Basic functionality test` is English), unless it is assigned (`token=...`, quoted).

A run's identities (its eval id, file, case id, variant, group, and the keys and locations of what it recorded) are
never rewritten: every report and the store find runs by them. A value shortened for display is scrubbed whole
first (`clean_text`, which `_core.values` applies): cut, a secret would no longer match.

The check is one JSON dump, a substring search per secret and per marker, and the patterns only where a marker
is; a record is rebuilt only when something is actually in it.
"""

from __future__ import annotations

import functools
import json
import os
import re
import weakref
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from pydantic import BaseModel

from niceeval._core.text import as_text, scrub

RunResult = TypeVar("RunResult", bound=BaseModel)
"""A run's result (`niceeval._core.results.RunResult`), named by its base: `_core.results` imports, through
`_core.errors` and `_core.values`, this module."""

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
"""Environment variables whose values are secrets (`OPENAI_API_KEY`, `GITHUB_TOKEN`, ...)."""
MIN_SECRET_CHARS = 8
"""Shorter values are not redacted: they would match ordinary text (and are no real credential)."""
REDACTED = "[redacted]"

_KEY_NAMES = r"authorization|proxy-authorization|x-api-key|api[-_]?key|(?:access[-_]?)?token|secret|password|passwd"
_SECRET_KEY = rf"^(?:.*[._])?(?:{_KEY_NAMES})$"  # also `http.request.header.authorization`
"""A field whose value is a credential, whatever the value looks like."""

_HEADER_CHARS = r"[A-Za-z0-9._~+/=-]"
_FIELD_CHARS = r"[^\s\"',;&]"
_KEY_CHARS = r"[A-Za-z0-9_-]"
_WORD = r"(?:[A-Z]?[a-z]+|[A-Z]+)"


def _plain(chars: str) -> str:
    """A whole run of `chars` that reads as words or a number (`functionality`, `refresh-works.`, `2026-11-27`):
    ordinary text, never taken for a credential, which mixes cases, letters and digits (`dXNlcjpwYXNz`)."""
    return rf"(?-i:(?:{_WORD}(?:[-._/]{_WORD})*|[0-9]+(?:[-.:/][0-9]+)*|[._~+/=*#-]+)[.!?:]*(?!{chars}))"


def _credential(chars: str) -> str:
    """8 or more of `chars` that do not read as words or a number."""
    return rf"(?!{_plain(chars)}){chars}{{8,}}"


def _assigned(names: str) -> str:
    """A field named like a credential up to its value. Assigned (`token=`, a quoted name or value) the value is
    taken whatever it looks like; after a bare `:` or ` = ` (`Password: forgotten`) only a credential-shaped one."""
    quote = r"\\?[\"']"  # a quote, or the same escaped in a JSON dump
    return (
        rf"(?:{names})(?:{quote}\s*[:=]\s*(?:{quote})?|=(?:{quote})?|\s*[:=]\s*{quote})(?!\[redacted)"
        rf"|(?:{names})\s*[:=]\s*(?!\[redacted)(?={_credential(_FIELD_CHARS)})"
    )


def _secret_text(names: str) -> str:
    """The credential-shaped text, from a header's scheme, a field's name or a key's prefix on."""
    return (
        rf"(?P<scheme>\b(?:Bearer|Basic|Token)\s+){_credential(_HEADER_CHARS)}"  # an Authorization header's value
        rf"|(?P<field>{_assigned(names)}){_FIELD_CHARS}{{8,}}"  # key=value, "key": "value", key: value
        rf"|\b(?:sk|rk|pk)-(?:ant-|proj-|live-|test-)?{_credential(_KEY_CHARS)}"  # OpenAI/Anthropic/Stripe keys
        r"|\bgh[pousr]_[A-Za-z0-9]{20,}|\bxox[abpr]-[A-Za-z0-9-]{10,}|\bAKIA[0-9A-Z]{16}\b"  # GitHub, Slack, AWS
    )


_SECRET_TEXT = (
    _secret_text(_KEY_NAMES)
    + r"|(?P<userinfo>\b[a-z][a-z0-9+.-]*://[^\s:/@\"']*:)(?!\[redacted)[^\s@/\"']+(?=@)"  # scheme://user:PASSWORD@
)
_NOT_A_SECRET = r"null|\"\"|\[\]|\{\}|true|false|-?[0-9]"
"""JSON values a credential-named field may hold without holding a credential: nothing, a flag or a number (the
`first_token` latency of a message)."""
_KEY_IN_JSON = rf'"(?:[^"]*[._])?(?:{_KEY_NAMES})"\s*:\s*(?!{_NOT_A_SECRET})'


@functools.cache
def _pattern(source: str) -> re.Pattern[str]:
    """`_SECRET_KEY`, `_SECRET_TEXT` and `_KEY_IN_JSON` compiled on first use: a clean run record needs only the
    patterns anchored at a marker (compiling the whole-text ones was a third of this module's import)."""
    return re.compile(source, re.IGNORECASE)


_MARKERS = (
    "bearer", "basic", "token", "sk-", "rk-", "pk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "xox", "akia",
    "authorization", "api-key", "api_key", "apikey", "secret", "passw",
)  # fmt: skip
"""Lower-case substrings every match of the patterns contains at its start or inside its field name (a URL's
password aside: see `_AUTHORITY`). The checks below run only where one occurs."""
_WHOLE_NAMES = frozenset({"token", "secret", "authorization", "api-key", "api_key", "apikey"})
"""Markers that are a whole field name: where a letter, digit or `_` follows (`input_tokens`, `secrets`), the marker
is inside a longer word, where no pattern can start (each wants a space, quote, `=` or `:` after the name). Skipped
without trying the patterns: a run's record names five token counts twice."""
_NAMES_AT = r"(?:authorization|api[-_]?key|token|secret|password|passwd)"
"""The field names from where a marker occurs (`proxy-`, `x-` and `access-` prefixes left before it)."""
_SECRET_AT = re.compile(_secret_text(_NAMES_AT), re.IGNORECASE)
"""`_SECRET_TEXT` but its URL part, anchored where a marker occurs."""
_KEY_AT = re.compile(rf'{_NAMES_AT}"\s*:\s*(?!{_NOT_A_SECRET})', re.IGNORECASE)
"""`_KEY_IN_JSON` from the name on; what may stand before the name is checked apart."""
_NAME_PREFIXES = ("proxy-", "x-", "access-", "access_", "access")
_AUTHORITY = re.compile(r"[^\s/@\"']*@")
"""What follows `://` when the URL names a user: no space, quote or slash before the `@`."""
_URL_BEFORE = 64
"""Enough of the text before `://` for any URL scheme."""


def credential_shaped(text: str) -> bool:
    """Whether `text` (plain, or a JSON dump) holds anything that looks like a credential: what `_SECRET_TEXT` or
    `_KEY_IN_JSON` would find.

    The patterns are matched only where a marker occurs, never tried at every position: field names such as
    `input_tokens` put markers in nearly every record, and a scan of the whole text cost a millisecond per run.
    """
    lowered = text.lower()
    if len(lowered) != len(text):  # a character whose lower case is longer moves the positions: scan it all
        return _pattern(_SECRET_TEXT).search(text) is not None or _pattern(_KEY_IN_JSON).search(text) is not None
    for marker in _MARKERS:
        at = lowered.find(marker)
        whole = marker in _WHOLE_NAMES
        while at != -1:
            inside = whole and _in_word(lowered, at + len(marker))
            if not inside and (_SECRET_AT.match(text, at) or _json_key_at(text, lowered, at)):
                return True
            at = lowered.find(marker, at + 1)
    at = text.find("://")
    while at != -1:
        authority = _AUTHORITY.match(text, at + 3)
        if authority and _pattern(_SECRET_TEXT).search(text, max(0, at - _URL_BEFORE), authority.end()):
            return True
        at = text.find("://", at + 1)
    return False


def _in_word(lowered: str, at: int) -> bool:
    """Whether a letter, digit or `_` is at `at`."""
    return at < len(lowered) and (lowered[at].isalnum() or lowered[at] == "_")


def _json_key_at(text: str, lowered: str, at: int) -> bool:
    """Whether a JSON field named like a credential, with a value, has its name at `at` (after any prefix)."""
    if not _KEY_AT.match(text, at):
        return False
    starts = [at] + [at - len(p) for p in _NAME_PREFIXES if at >= len(p) and lowered.startswith(p, at - len(p))]
    for start in starts:
        before = text[start - 1] if start else ""
        if before == '"' or (before in "._" and before and text.rfind('"', 0, start - 1) != -1):
            return True
    return False


_JSON_ESCAPES = (("\\n", "\n"), ("\\t", "\t"), ("\\r", "\r"), ('\\"', '"'), ("\\f", "\f"), ("\\b", "\b"), ("\\/", "/"))
_UNICODE_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def _unescaped(dumped: str) -> str:
    """A JSON dump with the escapes in its strings decoded, for the patterns to see each string as `scrub_text` will:
    a newline before a key is a word boundary, a tab after `Bearer` is a space (escaped, neither is)."""
    if "\\" not in dumped:
        return dumped
    text = dumped.replace("\\\\", "\x00")  # a dump writes NUL as `\u0000`: a raw one stands for `\\` here
    for escape, char in _JSON_ESCAPES:
        text = text.replace(escape, char)
    if "\\u" in text:
        text = _UNICODE_ESCAPE.sub(lambda match: chr(int(match.group(1), 16)), text)
    return text.replace("\x00", "\\")


def scrub_text(text: str) -> str:
    """`text` with every credential-shaped part replaced (a header's scheme, a field's name, a URL's user kept)."""

    def keep_prefix(match: re.Match[str]) -> str:
        return (match.group("scheme") or match.group("field") or match.group("userinfo") or "") + REDACTED

    return _pattern(_SECRET_TEXT).sub(keep_prefix, text)


def scrub_value(value: Any) -> Any:
    """A JSON-ready value with credential-shaped text and credential-named fields replaced."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        return {key: REDACTED if _credential_field(key, item) else scrub_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [scrub_value(item) for item in value]
    return value


def _credential_field(key: object, item: object) -> bool:
    """Whether `item` is a credential by its field's name: text or data (not nothing, a flag or a number)."""
    held = bool(item) and not isinstance(item, int | float)
    return held and isinstance(key, str) and _pattern(_SECRET_KEY).match(key) is not None


_CLEAN: dict[int, weakref.ref[BaseModel]] = {}
"""Results a `Redactor` found free of secrets, credential-shaped text, lone surrogates and NUL characters, by `id`
(a weak reference each: a result that is gone, or another object at its address, is never taken for it)."""


def _forget(key: int) -> None:
    _CLEAN.pop(key, None)


def is_clean(result: BaseModel) -> bool:
    """Whether a `Redactor` found this very object clean: `scrub_run(result, storable=True)` would return it
    unchanged (no redactor has more to find than the one that checked it; a copy is checked again)."""
    ref = _CLEAN.get(id(result))
    return ref is not None and ref() is result


def scrub_run(result: RunResult, *, storable: bool = False) -> RunResult:
    """`result` itself when it holds nothing credential-shaped, else a copy with each such value replaced.

    `storable`: also replace lone surrogates and NUL characters with U+FFFD (the store's rule).
    """
    return Redactor({}).run(result, storable=storable)


class Redactor:
    """Replaces known secret values with `[redacted:NAME]` and credential-shaped text with `[redacted]`."""

    def __init__(self, secrets: Mapping[str, str]) -> None:
        """`secrets` maps each secret value to the name shown in its place."""
        kept = {value: name for value, name in secrets.items() if len(value) >= MIN_SECRET_CHARS}
        self._secrets = sorted(kept.items(), key=lambda item: -len(item[0]))  # longest first: no partial leftovers
        self._in_json = [json.dumps(value)[1:-1] for value, _ in self._secrets]

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> Redactor:
        """Secrets from environment variables named like keys, tokens or passwords, plus `extra` values."""
        environ = os.environ if environ is None else environ
        secrets = {value: f"[redacted:{name}]" for name, value in environ.items() if SECRET_NAME.search(name)}
        secrets.update({value: "[redacted]" for value in extra if value not in secrets})
        return cls(secrets)

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def known(self, text: str) -> str:
        """`text` with every known secret replaced (and nothing else)."""
        for value, shown in self._secrets:
            if value in text:
                text = text.replace(value, shown)
        return text

    def text(self, text: str) -> str:
        """`text` with every known secret and everything credential-shaped replaced."""
        text = self.known(text)
        return scrub_text(text) if credential_shaped(text) else text

    def data(self, value: Any) -> Any:
        """A JSON-ready value with every known secret and everything credential-shaped replaced in its strings, and
        credential-named fields: scrubbed before it is dumped (in a JSON text, a key after an escaped newline has
        no word boundary before it)."""
        return scrub_value(self._replace(value))

    def run(self, result: RunResult, *, storable: bool = False) -> RunResult:
        """`result` itself when it holds no secret, else a copy with every secret replaced.

        `storable`: also replace lone surrogates and NUL characters with U+FFFD (the store's rule: what it keeps must
        encode as UTF-8 and fit PostgreSQL's text); without it they are kept, for the console to show them escaped.
        """
        try:  # a field at its default (None, 0, "", [], a fixed word) holds no secret: only the others are looked at
            dumped: str | None = result.model_dump_json(fallback=repr, exclude_defaults=True)
        except Exception:  # lone surrogates: look through the slow path
            dumped = None
        if dumped is not None:
            known = any(value in dumped for value in self._in_json)
            if not known and not credential_shaped(_unescaped(dumped)):
                if "\\u0000" not in dumped:  # no NUL character (nor the text `\u0000`, which takes the copy below)
                    key = id(result)  # the dump succeeded: no lone surrogate either
                    _CLEAN[key] = weakref.ref(result, lambda _, key=key: _forget(key))  # type: ignore[misc]
                    return result
                if not storable:
                    return result  # its NUL characters kept, for the console to show them escaped
        try:
            data = result.model_dump(mode="json", fallback=repr)
        except ValueError:  # bytes that are not UTF-8 (an agent's raw reply): as text, each bad byte escaped
            data = result.model_validate(as_text(result.model_dump())).model_dump(mode="json", fallback=repr)
        clean = _with_identities(self.data(data), data)
        return type(result).model_validate(scrub(clean, nul=True) if storable else clean)

    def _replace(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.known(value)
        if isinstance(value, dict):
            return {self._replace(k): self._replace(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._replace(v) for v in value]
        return value


_RUN_IDENTITIES = ("eval_id", "file", "line", "case_id", "variant", "group")
"""What names a run (its eval, case, variant, group, file): keys every report and the store look runs up by."""
_ASSERTION_IDENTITIES = ("key", "location")


def _with_identities(clean: dict[str, Any], original: dict[str, Any]) -> dict[str, Any]:
    """`clean` (a scrubbed dump of a run) with the identities of `original` back as they were: a name, an id or a
    path is never rewritten, whatever words it holds (`Basic functionality test`)."""
    clean.update({name: original[name] for name in _RUN_IDENTITIES})
    for scrubbed, was in zip(clean["assertions"], original["assertions"], strict=True):
        scrubbed.update({name: was[name] for name in _ASSERTION_IDENTITIES})
    if original["error"] is not None:
        clean["error"]["location"] = original["error"]["location"]
    return clean


_SUITE_REDACTOR: ContextVar[Redactor | None] = ContextVar("niceeval_suite_redactor", default=None)


@contextmanager
def redacting(redactor: Redactor) -> Iterator[None]:
    """Within this block (a suite's runs, and the tasks they start), `clean_text` knows `redactor`'s secrets: also
    those an agent was given in code."""
    token = _SUITE_REDACTOR.set(redactor)
    try:
        yield
    finally:
        _SUITE_REDACTOR.reset(token)


def clean_text(text: str) -> str:
    """`text` with every known secret and everything credential-shaped replaced: what a value gets, whole, before
    it is shortened for a report or the store (a cut secret no longer matches a pattern).

    The known secrets are the suite's (inside `redacting`), else those of the environment.
    """
    redactor = _SUITE_REDACTOR.get()
    return (redactor if redactor is not None else Redactor.from_environment()).text(text)
