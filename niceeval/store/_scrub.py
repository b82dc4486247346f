"""Secrets never stored: credential-shaped text and credential-named fields are scrubbed before any row is written.

The runner already replaces the values of known secrets (environment keys, an adapter's `api_key=`) in every run.
This is the store's own net for what no one declared: an `Authorization` header a tool echoed, a provider key in
an error message, an `api_key` field in a tool's input. A cheap substring test over the run's JSON, then the patterns
where it hits; a record is rebuilt only when a pattern matches.
"""

from __future__ import annotations

import re
from typing import Any

from niceeval._core.results import RunResult

_KEY_NAMES = r"authorization|proxy-authorization|x-api-key|api[-_]?key|(?:access[-_]?)?token|secret|password|passwd"
_SECRET_KEY = re.compile(rf"^(?:{_KEY_NAMES})$", re.IGNORECASE)
"""A field whose value is a credential, whatever the value looks like."""
_SECRET_TEXT = re.compile(
    r"(?P<scheme>\b(?:Bearer|Basic|Token)\s+)[A-Za-z0-9._~+/=-]{8,}"  # an Authorization header's value
    rf"|(?P<field>(?:{_KEY_NAMES})[\"']?\s*[:=]\s*[\"']?)(?!\[redacted)[^\s\"',;]{{8,}}"  # key: value, key=value
    r"|\b(?:sk|rk|pk)-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{16,}"  # OpenAI/Anthropic/Stripe-style keys
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}|\bxox[abpr]-[A-Za-z0-9-]{10,}|\bAKIA[0-9A-Z]{16}\b",  # GitHub, Slack, AWS
    re.IGNORECASE,
)
_KEY_IN_JSON = re.compile(rf'"(?:{_KEY_NAMES})"\s*:\s*(?!null|""|\[\]|\{{\}})', re.IGNORECASE)
REDACTED = "[redacted]"
_MARKERS = (
    "bearer", "basic ", 'token"', "token=", "token:", "token ", "sk-", "rk-", "pk-", "ghp_", "gho_", "ghu_",
    "ghs_", "ghr_", "xox", "akia", "authorization", "api-key", "api_key", "apikey", "secret", "passw",
)  # fmt: skip
"""Lower-case substrings every match of the patterns contains: most records have none, and a substring test is
far cheaper than the regexes (which scan every position)."""


def _text(value: str) -> str:
    def keep_prefix(match: re.Match[str]) -> str:
        return (match.group("scheme") or match.group("field") or "") + REDACTED

    return _SECRET_TEXT.sub(keep_prefix, value)


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, dict):
        return {
            key: REDACTED if isinstance(key, str) and _SECRET_KEY.match(key) and item else _scrub(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_scrub(item) for item in value]
    return value


def scrub_run(result: RunResult) -> RunResult:
    """`result` itself when it holds nothing credential-shaped, else a copy with each such value replaced."""
    dumped = result.model_dump_json(fallback=repr)
    lowered = dumped.lower()
    if not any(marker in lowered for marker in _MARKERS):
        return result
    if _SECRET_TEXT.search(dumped) is None and _KEY_IN_JSON.search(dumped) is None:
        return result
    return RunResult.model_validate(_scrub(result.model_dump(mode="json", fallback=repr)))
