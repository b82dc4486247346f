"""Model strings to SDK clients, and resilient calls shared by agents and judges.

- `parse_model("openai/gpt-5-mini")` -> `ModelRef(provider="openai", name="gpt-5-mini")`; unknown provider prefixes
  fail with the list of known ones.
- `openai_client(...)` / `anthropic_client(...)` build the official async SDK clients (imported lazily), with keys
  and base URLs from arguments or the usual environment variables, so OpenAI-compatible local servers work.
  SDK-level retries are off: `call()` retries itself so it can honour `Retry-After` and adapt concurrency.
- `call(ref, fn, ...)`: runs one provider request under the provider's shared adaptive limiter (agents and judges
  draw from the same one), retrying 429 / 5xx / timeouts / connection errors with exponential backoff and jitter,
  honouring `Retry-After` (no request to that provider starts before it), halving the provider's concurrency once
  per burst of 429s (never below a floor) and growing it back by a quarter after a few successes. Errors
  that remain are raised as `ProviderError` with a `cause` (`rate_limited`, `timeout`, `provider_error`,
  `parse_error`, `no_api_key`) and a message naming the provider and model.
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import random
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
import anyio.lowlevel

from niceeval._core.errors import NiceevalError, UsageError
from niceeval._core.threads import once_off_loop
from niceeval._core.values import head

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletion

T = TypeVar("T")
Provider = Literal["openai", "anthropic"]
PROVIDERS: dict[str, tuple[str, str]] = {
    # provider: (API key variable, base URL variable)
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
}
ProviderCause = Literal["timeout", "provider_error", "rate_limited", "parse_error", "no_api_key"]


@dataclass(frozen=True, slots=True)
class ModelRef:
    """A `provider/model` string, parsed."""

    provider: Provider
    name: str

    def __str__(self) -> str:
        return f"{self.provider}/{self.name}"


def parse_model(model: str) -> ModelRef:
    """Parse `provider/model`; say what to write when it is malformed or the provider is unknown."""
    if not isinstance(model, str) or "/" not in model:
        raise UsageError(
            f"model {model!r} needs a provider prefix, e.g. 'openai/gpt-5-mini' or 'anthropic/claude-haiku-4-5'."
        )
    provider, name = model.split("/", 1)
    if provider not in PROVIDERS or not name:
        raise UsageError(f"unknown provider {provider!r} in model {model!r}; known providers: {', '.join(PROVIDERS)}.")
    return ModelRef(provider=provider, name=name)  # type: ignore[arg-type]


class ProviderError(NiceevalError):
    """A provider call that failed for good (after retries)."""

    def __init__(self, cause: ProviderCause, message: str, *, model: str = "", status: int | None = None) -> None:
        super().__init__(message)
        self.cause: ProviderCause = cause
        self.model = model
        self.status = status


def api_key(provider: Provider, explicit: str | None = None) -> str:
    """The API key: the explicit one, else the provider's environment variable; `ProviderError(no_api_key)` if none."""
    key = explicit or os.environ.get(PROVIDERS[provider][0])
    if not key:
        raise ProviderError(
            "no_api_key", f"no API key for {provider}: set {PROVIDERS[provider][0]} (in the environment or .env)"
        )
    return key


def base_url(provider: Provider, explicit: str | None = None) -> str | None:
    """The base URL: the explicit one, else the provider's environment variable, else the SDK default (None)."""
    return explicit or os.environ.get(PROVIDERS[provider][1]) or None


_SCOPE: ContextVar[dict[tuple[str, str | None, str | None, float], Any] | None] = ContextVar(
    "niceeval_client_scope", default=None
)


@asynccontextmanager
async def shared_clients() -> AsyncIterator[None]:
    """Within this scope, SDK clients are shared per provider, key, URL and timeout, and closed at its end.

    `niceeval run` opens one around the suite: every agent session and judge call borrows the same connection
    pool (one TLS setup per provider instead of one per eval). Outside a scope each call gets its own client.
    """
    clients: dict[tuple[str, str | None, str | None, float], Any] = {}
    token = _SCOPE.set(clients)
    try:
        yield
    finally:
        _SCOPE.reset(token)
        for client in clients.values():
            await client.close()


def _shared(provider: str, key: str, url: str | None, timeout: float, make: Callable[[], T]) -> T:
    clients = _SCOPE.get()
    if clients is None:
        return make()
    slot = (provider, key, url, timeout)
    if slot not in clients:
        clients[slot] = make()
    client: T = clients[slot]
    return client


def shared_resource(kind: str, make: Callable[[], T]) -> T:
    """`make()` once per client scope, closed (`await value.close()`) at its end; outside a scope, a new one each
    call. Give it back with `release()`. The agents' recording bridge is one: one local server per suite."""
    return _shared(kind, "", None, 0.0, make)


async def release(client: Any) -> None:
    """Done with a client from `openai_client` / `anthropic_client` / `shared_resource`: close it unless a scope
    shares it."""
    clients = _SCOPE.get()
    if clients is None or all(client is not shared for shared in clients.values()):
        await client.close()


_READY: set[str] = set()


async def sdk_ready(provider: Provider) -> None:
    """Load `provider`'s SDK in a worker thread, once: await it before `openai_client()` / `anthropic_client()`
    in a coroutine, so the import (0.3 to 1 s, and the HTTP stack its first client loads) never stalls the loop."""
    await once_off_loop(f"sdk {provider}", lambda: _warm_up(provider), lambda: provider in _READY)


_WARMING = threading.Lock()


def _warm_up(provider: Provider) -> None:
    # One thread warms up; the others (every eval of a suite asks at once) wait for it instead of each building
    # its own throwaway client (50 ms of CPU apiece, and the import lock fought over).
    with _WARMING:
        if provider not in _READY:
            _build_throwaway_client(provider)
            _READY.add(provider)
    from niceeval.providers._pricing import load_prices_in_background

    load_prices_in_background()  # calls through this SDK will be priced: the data loads while they are out


def _build_throwaway_client(provider: Provider) -> None:
    # The first client imports the SDK's HTTP transport and the resource niceeval calls, not just the package; not
    # the Responses API's (3 MB of types nothing of niceeval's sends) nor a trust store (the suite's real client
    # loads its own).
    if provider == "openai":
        from openai import AsyncOpenAI, DefaultAsyncHttpxClient

        client = AsyncOpenAI(
            api_key="warm-up", base_url="http://127.0.0.1:9", http_client=DefaultAsyncHttpxClient(verify=False)
        )
        _ = client.chat.completions
    else:
        from anthropic import AsyncAnthropic
        from anthropic import DefaultAsyncHttpxClient as AnthropicHttpxClient

        plain = AnthropicHttpxClient(verify=False)
        _ = AsyncAnthropic(api_key="warm-up", base_url="http://127.0.0.1:9", http_client=plain).messages


def _splits() -> bool:
    # A client shared by a suite's evals takes many requests at once; one built per call, or one told of a proxy by
    # the environment (which httpx reads only for a client built without a transport), keeps the SDK's default.
    from niceeval.providers._pool import proxied

    return _SCOPE.get() is not None and not proxied()


def _split() -> Any:
    import httpx2

    from niceeval.providers._pool import SplitTransport

    return SplitTransport(httpx2.Limits(max_connections=1000, max_keepalive_connections=100))


def openai_client(*, key: str | None = None, url: str | None = None, timeout: float = 60.0) -> AsyncOpenAI:
    """An async OpenAI client with SDK retries off (`call()` retries). Give it back with `release()`.

    In a coroutine, `await sdk_ready("openai")` first (no key: `ProviderError(no_api_key)` before any import).
    """
    token, where = api_key("openai", key), base_url("openai", url)
    from openai import AsyncOpenAI, DefaultAsyncHttpxClient

    def make() -> AsyncOpenAI:
        http = DefaultAsyncHttpxClient(transport=_split()) if _splits() else None
        return AsyncOpenAI(api_key=token, base_url=where, timeout=timeout, max_retries=0, http_client=http)

    return _shared("openai", token, where, timeout, make)


async def chat_completion(client: AsyncOpenAI, body: dict[str, Any], *, timeout: float) -> ChatCompletion:
    """`POST /chat/completions` with `body` as it is, answered as the SDK's `ChatCompletion`.

    The same request as `client.chat.completions.create(**body)` (auth, headers, error types, response model) without
    the SDK's parameter transform, which walks every message and schema against its typed-dict annotations to
    rename aliased keys and serialise models and dates: 0.2 ms of CPU for a one-message request and 0.45 ms for a
    judge's, per call. A body built of plain dicts, lists and strings (what niceeval sends) needs none of it.
    """
    from openai.types.chat import ChatCompletion

    return await client.post("/chat/completions", cast_to=ChatCompletion, body=body, options={"timeout": timeout})


def anthropic_client(*, key: str | None = None, url: str | None = None, timeout: float = 60.0) -> AsyncAnthropic:
    """An async Anthropic client with SDK retries off (`call()` retries). Give it back with `release()`."""
    token, where = api_key("anthropic", key), base_url("anthropic", url)
    from anthropic import AsyncAnthropic, DefaultAsyncHttpxClient

    def make() -> AsyncAnthropic:
        http = DefaultAsyncHttpxClient(transport=_split()) if _splits() else None
        return AsyncAnthropic(api_key=token, base_url=where, timeout=timeout, max_retries=0, http_client=http)

    return _shared("anthropic", token, where, timeout, make)


class AdaptiveLimiter:
    """Concurrency for one provider, steered by its 429s.

    - A 429 halves the limit once per burst: the requests already in flight when the limit was cut answer from
      before the cut, and their 429s say nothing new (`epoch` tells them apart). The limit never goes below
      `floor` (a quarter of the ceiling up to 8): a provider that rate-limits a share of requests is still
      served by several at once, each retrying when told.
    - A 429's `Retry-After` is when the provider takes requests again: no new request starts before it.
    - After `grow_after` successes in a row the limit grows by a quarter (at least one), so it is back at the
      ceiling within seconds of the 429s stopping.
    """

    def __init__(self, ceiling: int, *, grow_after: int = 4, floor: int | None = None) -> None:
        self.ceiling = ceiling
        self.floor = max(1, min(ceiling, floor if floor is not None else min(8, ceiling // 4)))
        self._limiter = anyio.CapacityLimiter(ceiling)
        self._grow_after = grow_after
        self._successes = 0
        self.epoch = 0
        """Counts the cuts; a request notes it when it starts (see `rate_limited`)."""
        self._resume_at = 0.0

    @property
    def limit(self) -> int:
        return int(self._limiter.total_tokens)

    async def __aenter__(self) -> None:
        while self._resume_at and (wait := self._resume_at - anyio.current_time()) > 0:
            await anyio.sleep(wait)
        try:  # a free slot is taken at once: `acquire()` would pass through the event loop first, every time
            self._limiter.acquire_nowait()
        except anyio.WouldBlock:
            await self._limiter.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self._limiter.release()

    def rate_limited(self, epoch: int | None = None, retry_after: float | None = None) -> None:
        """A 429 for a request started in `epoch` (None: cut anyway), asking to wait `retry_after` seconds."""
        self._successes = 0
        if retry_after is not None and self.limit <= self.floor:
            self._resume_at = max(self._resume_at, anyio.current_time() + retry_after)
        if epoch is not None and epoch != self.epoch:
            return  # the limit was cut since this request started: its 429 is from the same burst
        self.epoch += 1
        self._limiter.total_tokens = max(self.floor, self.limit // 2)

    def succeeded(self) -> None:
        self._successes += 1
        if self._successes >= self._grow_after and self.limit < self.ceiling:
            self._successes = 0
            self._limiter.total_tokens = min(self.ceiling, self.limit + max(1, self.limit // 4))


_limiters: MutableMapping[object, dict[str, AdaptiveLimiter]] = weakref.WeakKeyDictionary()


def limiter_for(provider: str, *, ceiling: int = 64) -> AdaptiveLimiter:
    """The limiter shared by every agent and judge call to `provider` in this event loop.

    Kept per event loop: a limiter belongs to the loop it waits in, and tests (or scripts) may run several.
    """
    per_loop = _limiters.setdefault(anyio.lowlevel.current_token().native_token, {})
    if provider not in per_loop:
        per_loop[provider] = AdaptiveLimiter(ceiling)
    return per_loop[provider]


@dataclass(frozen=True, kw_only=True, slots=True)
class RetryPolicy:
    """How `call()` retries."""

    max_retries: int = 4
    base_delay: float = 0.5
    max_delay: float = 30.0


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
                if attempt:
                    note = f"{error} (gave up after {attempt + 1} attempts)"
                    error = ProviderError(error.cause, note, model=error.model, status=error.status)
                raise error from exc
            delay = asked
            if delay is None:
                delay = min(policy.max_delay, policy.base_delay * 2**attempt) * (0.5 + random.random() / 2)
            attempt += 1
            await anyio.sleep(min(delay, policy.max_delay))
