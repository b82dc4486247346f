"""`providers.call`: retries that honour Retry-After, adaptive limits, and errors that say what went wrong."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from types import SimpleNamespace

import anyio
import pytest
from openai import AsyncOpenAI

from niceeval._core.errors import UsageError
from niceeval.providers import (
    AdaptiveLimiter,
    ProviderError,
    RetryPolicy,
    _call,
    _limiter,
    call,
    limiter_for,
    openai_client,
    parse_model,
)
from niceeval.testing import Fault, LLMServer

pytestmark = pytest.mark.anyio
QUICK = RetryPolicy(max_retries=3, base_delay=0.001, max_delay=5.0)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def fresh_limiters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_limiter, "_limiters", {})


@asynccontextmanager
async def client(server: LLMServer, timeout: float = 5.0) -> AsyncIterator[AsyncOpenAI]:
    sdk = openai_client(key="k", url=server.base_url, timeout=timeout)
    try:
        yield sdk
    finally:
        await sdk.close()


async def ask(sdk: AsyncOpenAI, policy: RetryPolicy = QUICK, timeout: float | None = None) -> str | None:
    async def request() -> str | None:
        completion = await sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        return completion.choices[0].message.content

    return await call("openai/m", request, policy=policy, timeout=timeout)


async def test_a_429_is_retried_after_the_retry_after_it_carries(llm_server: LLMServer) -> None:
    llm_server.push(Fault.rate_limit(retry_after=0.3), "ok")
    async with client(llm_server) as sdk:
        started = time.monotonic()
        assert await ask(sdk) == "ok"
    assert 0.3 <= time.monotonic() - started < 2
    assert len(llm_server.requests) == 2


async def test_a_429_halves_the_providers_concurrency(llm_server: LLMServer) -> None:
    llm_server.push(Fault.rate_limit(), Fault.rate_limit(), "ok")
    async with client(llm_server) as sdk:
        assert await ask(sdk) == "ok"
    assert limiter_for("openai").limit == 16
    assert limiter_for("anthropic").limit == 64


def test_the_limiter_grows_back_after_successes() -> None:
    limiter = AdaptiveLimiter(4, grow_after=2)
    limiter.rate_limited()
    limiter.rate_limited()
    limiter.rate_limited()
    assert limiter.limit == 1
    for _ in range(4):
        limiter.succeeded()
    assert limiter.limit == 3


def test_the_limiter_never_drops_below_its_floor_and_is_back_at_the_ceiling_after_few_successes() -> None:
    limiter = AdaptiveLimiter(64)
    for _ in range(100):  # a long storm of 429s
        limiter.rate_limited()
    assert (limiter.floor, limiter.limit) == (8, 8)
    successes = 0
    while limiter.limit < 64:
        limiter.succeeded()
        successes += 1
    assert successes == 44  # 8 -> 10 -> 12 -> 15 -> 18 -> 22 -> 27 -> 33 -> 41 -> 51 -> 63 -> 64, 4 successes each


def test_429s_of_one_burst_cut_the_limit_once() -> None:
    limiter = AdaptiveLimiter(64)
    started = limiter.epoch
    for _ in range(20):  # twenty requests in flight together, all answered 429
        limiter.rate_limited(started)
    assert limiter.limit == 32
    limiter.rate_limited(limiter.epoch)  # a request started after the cut is news
    assert limiter.limit == 16


async def test_at_the_floor_retry_after_holds_every_new_request_of_the_provider() -> None:
    limiter = AdaptiveLimiter(4, floor=2)
    limiter.rate_limited()
    limiter.rate_limited(retry_after=30)
    entered = False
    with anyio.move_on_after(0.2):
        async with limiter:
            entered = True
    assert not entered
    assert await _enters(AdaptiveLimiter(4, floor=2))


async def _enters(limiter: AdaptiveLimiter) -> bool:
    limiter.rate_limited(retry_after=30)  # above the floor: only the request that got the 429 waits
    async with limiter:
        return True


async def test_a_401_is_not_retried_and_says_to_check_the_key(llm_server: LLMServer) -> None:
    llm_server.push(Fault.unauthorized())
    async with client(llm_server) as sdk:
        with pytest.raises(ProviderError) as caught:
            await ask(sdk)
    error = caught.value
    assert str(error) == (
        "openai/m: HTTP 401 from the provider: Invalid API key (injected). "
        "(check the API key: api_key= or OPENAI_API_KEY)"
    )
    assert (error.cause, error.status, error.model) == ("provider_error", 401, "openai/m")
    assert len(llm_server.requests) == 1


async def test_server_errors_are_retried_then_reported_with_the_attempts(llm_server: LLMServer) -> None:
    llm_server.faults = lambda request: Fault.server_error(503, "overloaded")
    async with client(llm_server) as sdk:
        with pytest.raises(ProviderError, match=r"HTTP 503 from the provider: overloaded \(gave up after 4 attempts\)"):
            await ask(sdk)
    assert len(llm_server.requests) == 4


async def test_a_client_timeout_has_the_timeout_cause(llm_server: LLMServer) -> None:
    llm_server.push(Fault.hang())
    async with client(llm_server, timeout=0.1) as sdk:
        with pytest.raises(ProviderError, match="openai/m: the request timed out") as caught:
            await ask(sdk, RetryPolicy(max_retries=0))
    assert caught.value.cause == "timeout"


async def test_calls_time_out_on_their_own_deadline_too() -> None:
    async def never() -> None:
        await anyio.sleep(10)

    with pytest.raises(ProviderError) as caught:
        await call("anthropic/claude-haiku-4-5", never, policy=RetryPolicy(max_retries=0), timeout=0.05)
    assert caught.value.cause == "timeout"


async def test_unknown_providers_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="unknown provider 'cohere' in model 'cohere/command'; known providers"):
        parse_model("cohere/command")
    with pytest.raises(UsageError, match="needs a provider prefix"):
        await call("gpt-5", lambda: anyio.sleep(0))


async def test_a_provider_error_raised_by_the_request_passes_through_unretried() -> None:
    attempts = 0

    async def no_key() -> None:
        nonlocal attempts
        attempts += 1
        raise ProviderError("no_api_key", "no API key for openai")

    with pytest.raises(ProviderError, match="no API key for openai") as caught:
        await call("openai/m", no_key, policy=QUICK)
    assert attempts == 1 and caught.value.__cause__ is None


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "soon", "retry-after": "2"}, 2.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after": "nan"}, None),
        ({}, None),
    ],
)
def test_retry_after_headers(headers: dict[str, str], seconds: float | None) -> None:
    error = SimpleNamespace(response=SimpleNamespace(headers=headers))
    assert _call._retry_after(error) == seconds  # type: ignore[arg-type]


def test_retry_after_as_an_http_date() -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    error = SimpleNamespace(response=SimpleNamespace(headers={"retry-after": when}))
    assert 28 <= (_call._retry_after(error) or 0) <= 30  # type: ignore[arg-type]
