"""`ProviderError`, and how an SDK's exception becomes one (with whether retrying may help)."""

from __future__ import annotations

import json
from typing import Literal

from niceeval._core.errors import NiceevalError
from niceeval._core.values import head
from niceeval.providers._model_ref import PROVIDERS

ProviderCause = Literal["timeout", "provider_error", "rate_limited", "parse_error", "no_api_key"]


class ProviderError(NiceevalError):
    """A provider call that failed for good (after retries)."""

    def __init__(
        self, cause: ProviderCause, message: str, *, model: str = "", status: int | None = None, transient: bool = False
    ) -> None:
        super().__init__(message)
        self.cause: ProviderCause = cause
        self.model = model
        self.status = status
        self.transient = transient
        """Raised after retries of an error that retrying may fix (5xx, 429, timeout, connection): an outage."""


def classify(exc: BaseException, model: str) -> tuple[ProviderError, bool]:
    """Map an SDK exception to a `ProviderError` and whether retrying may help."""
    status = getattr(exc, "status_code", None)
    kind = type(exc).__name__
    if isinstance(exc, ProviderError):
        return exc, False
    if isinstance(exc, json.JSONDecodeError):
        return ProviderError("parse_error", f"{model}: the provider's response was not valid JSON", model=model), True
    if kind in ("APITimeoutError", "TimeoutError") or isinstance(exc, TimeoutError):
        return ProviderError("timeout", f"{model}: the request timed out", model=model), True
    if status == 429:
        return ProviderError("rate_limited", f"{model}: rate limited (HTTP 429)", model=model, status=429), True
    if isinstance(status, int):
        message = f"{model}: HTTP {status} from the provider: {_short_message(exc)}"
        if status in (401, 403):
            provider = model.split("/", 1)[0]
            variable = PROVIDERS[provider][0] if provider in PROVIDERS else "the provider's key variable"
            message += f" (check the API key: api_key= or {variable})"
        retry = status >= 500 or status in (408, 409)
        return ProviderError("provider_error", message, model=model, status=status), retry
    if kind == "APIConnectionError":
        return ProviderError("provider_error", _connect_message(exc, model), model=model), True
    return ProviderError("provider_error", f"{model}: {kind}: {exc}", model=model), False


def _connect_message(exc: BaseException, model: str) -> str:
    """`could not connect`, naming the URL tried and where that URL comes from."""
    url = getattr(getattr(exc, "request", None), "url", None)
    if url is None:
        return f"{model}: could not connect: {exc}"
    provider = model.split("/", 1)[0]
    variable = PROVIDERS[provider][1] if provider in PROVIDERS else "the base URL"
    return f"{model}: could not connect to {url} ({exc}); check {variable} or base_url="


def _short_message(exc: BaseException) -> str:
    """The provider's own error message when the body has one, not the SDK's `Error code: ... - {body}`."""
    text = getattr(exc, "api_message", None)  # Anthropic: `error.message` of the body
    body = getattr(exc, "body", None)
    if not isinstance(text, str) and isinstance(body, dict) and isinstance(body.get("message"), str):
        text = body["message"]  # OpenAI: the body is the `error` object
    if not isinstance(text, str) or not text:
        text = str(getattr(exc, "message", None) or exc)
    return head(text, 300) + ("..." if len(text) > 300 else "")
