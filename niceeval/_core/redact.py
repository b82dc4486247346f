"""Secrets never reach a report: API keys and tokens are replaced in every run before any sink sees it.

A provider's error may quote the key it was given, an agent may echo its environment, a tool may print a token.
The runner redacts each finished run (and each load problem) once, so the console, the JSON and JUnit reports and
the results store all get the same clean record. The check is one JSON dump and a substring search per secret;
a record is rebuilt only when a secret is actually in it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from niceeval._core.results import RunResult

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
"""Environment variables whose values are secrets (`OPENAI_API_KEY`, `GITHUB_TOKEN`, ...)."""
MIN_SECRET_CHARS = 8
"""Shorter values are not redacted: they would match ordinary text (and are no real credential)."""


class Redactor:
    """Replaces known secret values with `[redacted:NAME]`."""

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

    def text(self, text: str) -> str:
        """`text` with every secret replaced."""
        for value, shown in self._secrets:
            if value in text:
                text = text.replace(value, shown)
        return text

    def run(self, result: RunResult) -> RunResult:
        """`result` itself when it holds no secret, else a copy with every secret replaced."""
        if not self._secrets:
            return result
        try:
            dumped = result.model_dump_json(fallback=repr)
        except Exception:  # lone surrogates: look through the slow path
            dumped = None
        if dumped is not None and not any(value in dumped for value in self._in_json):
            return result
        data = result.model_dump(mode="json", fallback=repr)
        return RunResult.model_validate(self._replace(data))

    def _replace(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self._replace(k): self._replace(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._replace(v) for v in value]
        return value
