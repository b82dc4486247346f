"""The official async SDK clients: keys and base URLs from arguments or the environment, shared within a scope."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

from niceeval.providers._errors import ProviderError
from niceeval.providers._model_ref import PROVIDERS, Provider

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletion

T = TypeVar("T")


def api_key(provider: Provider, explicit: str | None = None) -> str:
    """The API key: the explicit one, else the provider's environment variable.

    Raises:
        ProviderError: `no_api_key`, naming the variable to set, when there is none.
    """
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
    """`make()` once per client scope, closed (`await value.close()`) at its end; outside a scope, a new one each call.

    Give it back with `release()`. The agents' recording bridge is one: one local server per suite.
    """
    return _shared(kind, "", None, 0.0, make)


async def release(client: Any) -> None:
    """Done with a client from `openai_client` / `anthropic_client` / `shared_resource`: close it unless shared."""
    clients = _SCOPE.get()
    if clients is None or all(client is not shared for shared in clients.values()):
        await client.close()


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
    rename aliased keys and serialise models and dates, on every call. A body built of plain dicts, lists and
    strings (what niceeval sends) needs none of it.
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
