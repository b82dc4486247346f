"""`call()`: one provider request under its provider's limiter, retried while retrying may help."""

from __future__ import annotations

import email.utils
import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

import anyio

from niceeval.providers._errors import ProviderError, classify
from niceeval.providers._limiter import limiter_for
from niceeval.providers._model_ref import ModelRef, parse_model

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True, slots=True)
class RetryPolicy:
    """How `call()` retries.

    Attributes:
        max_retries: Retries after the first attempt before the error is raised.
        base_delay: Seconds before the first retry; each retry waits twice as long, with jitter.
        max_delay: The longest wait between attempts, also for a provider's `Retry-After`.
    """

    max_retries: int = 4
    base_delay: float = 0.5
    max_delay: float = 30.0


async def call(
    model: ModelRef | str,
    request: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy | None = None,
    timeout: float | None = None,
) -> T:
    """Run `request()` for `model` under its provider's limiter, retrying what may succeed later.

    Raises:
        ProviderError: with the cause and a message naming the model, once retries are spent.
    """
    ref = model if isinstance(model, ModelRef) else parse_model(model)
    policy = policy or RetryPolicy()
    limiter = limiter_for(ref.provider)
    attempt = 0
    while True:
        epoch = limiter.epoch
        try:
            async with limiter:
                epoch = limiter.epoch  # the limit as this request started (after any wait for a slot)
                with anyio.fail_after(timeout):
                    result = await request()
            limiter.succeeded()
            return result
        except Exception as exc:
            error, retryable = classify(exc, str(ref))
            if error is exc:
                raise
            asked = _retry_after(exc)
            if error.cause == "rate_limited":
                limiter.rate_limited(epoch, None if asked is None else min(asked, policy.max_delay))
            if not retryable or attempt >= policy.max_retries:
                if attempt or retryable:  # `transient`: an error retrying may fix, retries spent: an outage
                    note = f"{error} (gave up after {attempt + 1} attempts)" if attempt else str(error)
                    error = ProviderError(
                        error.cause, note, model=error.model, status=error.status, transient=retryable
                    )
                raise error from exc
            delay = asked
            if delay is None:
                delay = min(policy.max_delay, policy.base_delay * 2**attempt) * (0.5 + random.random() / 2)
            attempt += 1
            await anyio.sleep(min(delay, policy.max_delay))


def _retry_after(exc: BaseException) -> float | None:
    """Seconds the provider asked to wait: `retry-after-ms`, else `Retry-After` in seconds or as an HTTP date."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    milliseconds = _number(headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    value = headers.get("retry-after")
    seconds = _number(value)
    if seconds is not None or not isinstance(value, str):
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(when.tzinfo or UTC)).total_seconds())


def _number(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return max(0.0, number) if math.isfinite(number) else None
