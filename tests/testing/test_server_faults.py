"""Injected faults as the real SDKs see them: status errors, retries, hangs, broken bodies, latency."""

from __future__ import annotations

import json
import time

import anthropic
import openai
import pytest

from niceeval.testing import Fault, LLMRequest, LLMServer, Reply, fail_first


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def ask_openai(server: LLMServer, *, max_retries: int = 0, timeout: float = 5.0) -> str | None:
    with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=max_retries, timeout=timeout) as c:
        completion = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    return completion.choices[0].message.content


def ask_anthropic(server: LLMServer, *, max_retries: int = 0, timeout: float = 5.0) -> str:
    with anthropic.Anthropic(
        base_url=server.anthropic_base_url, api_key="k", max_retries=max_retries, timeout=timeout
    ) as c:
        message = c.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    block = message.content[0]
    assert isinstance(block, anthropic.types.TextBlock)
    return block.text


def retry_counts(server: LLMServer) -> list[str]:
    return [r.headers["x-stainless-retry-count"] for r in server.requests]


def test_rate_limit_carries_retry_after_in_both_shapes() -> None:
    with LLMServer([Fault.rate_limit(retry_after=2), Fault.rate_limit(retry_after=2)]) as server:
        with pytest.raises(openai.RateLimitError) as openai_error:
            ask_openai(server)
        with pytest.raises(anthropic.RateLimitError) as anthropic_error:
            ask_anthropic(server)
    assert openai_error.value.response.headers["retry-after"] == "2"
    assert openai_error.value.code == "rate_limit_exceeded"
    assert "Rate limit reached" in openai_error.value.message
    assert anthropic_error.value.response.headers["retry-after"] == "2"
    assert anthropic_error.value.type == "rate_limit_error"


def test_fail_first_then_succeed_with_sdk_retries() -> None:
    with LLMServer(["ok", "ok"], faults=fail_first(2)) as server:
        assert ask_openai(server, max_retries=2) == "ok"
        assert retry_counts(server) == ["0", "1", "2"]
        assert ask_anthropic(server, max_retries=2) == "ok"
        assert len(server.requests) == 4
        assert server.remaining == 0


def test_openai_waits_for_retry_after() -> None:
    # The SDK's own first backoff is at most 0.5 s, so waiting 0.6 s shows it read Retry-After.
    with LLMServer([Fault.rate_limit(retry_after=0.6), "ok"]) as server:
        start = time.monotonic()
        assert ask_openai(server, max_retries=1) == "ok"
        assert time.monotonic() - start >= 0.6
    assert retry_counts(server) == ["0", "1"]


@pytest.mark.anyio
async def test_async_anthropic_waits_for_retry_after() -> None:
    async with LLMServer([Fault.rate_limit(retry_after=0.6), "ok"]) as server:
        async with anthropic.AsyncAnthropic(
            base_url=server.anthropic_base_url, api_key="k", max_retries=1
        ) as c:
            start = time.monotonic()
            await c.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
            assert time.monotonic() - start >= 0.6
    assert retry_counts(server) == ["0", "1"]


def test_server_error() -> None:
    with LLMServer([Fault.server_error(), Fault.server_error(), Fault.error(503)]) as server:
        with pytest.raises(openai.InternalServerError) as openai_error:
            ask_openai(server)
        with pytest.raises(anthropic.InternalServerError):
            ask_anthropic(server)
        with pytest.raises(openai.InternalServerError):
            ask_openai(server)
    assert openai_error.value.status_code == 500
    assert openai_error.value.type == "server_error"


def test_should_retry_false_stops_sdk_retries() -> None:
    with LLMServer([Fault.server_error(should_retry=False), "unused"]) as server:
        with pytest.raises(openai.InternalServerError):
            ask_openai(server, max_retries=2)
        assert len(server.requests) == 1


def test_unauthorized_is_not_retried() -> None:
    with LLMServer([Fault.unauthorized(), Fault.unauthorized(), "unused"]) as server:
        with pytest.raises(openai.AuthenticationError) as openai_error:
            ask_openai(server, max_retries=2)
        with pytest.raises(anthropic.AuthenticationError) as anthropic_error:
            ask_anthropic(server, max_retries=2)
        assert len(server.requests) == 2
    assert openai_error.value.code == "invalid_api_key"
    assert anthropic_error.value.type == "authentication_error"


def test_overloaded_maps_to_the_anthropic_subclass() -> None:
    with LLMServer([Fault.error(529)]) as server, pytest.raises(anthropic.OverloadedError):
        ask_anthropic(server)


def test_fault_rule_sees_the_request() -> None:
    def only_the_right_key(request: LLMRequest) -> Fault | None:
        return None if request.headers.get("authorization") == "Bearer right" else Fault.unauthorized()

    with LLMServer(["welcome"], faults=only_the_right_key) as server:
        with pytest.raises(openai.AuthenticationError):
            ask_openai(server)
        with openai.OpenAI(base_url=server.base_url, api_key="right", max_retries=0) as c:
            completion = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert completion.choices[0].message.content == "welcome"


def test_hang_times_the_client_out_and_does_not_block_shutdown() -> None:
    server = LLMServer([Fault.hang(), Fault.hang()]).start()
    try:
        with pytest.raises(openai.APITimeoutError):
            ask_openai(server, timeout=0.3)
        with pytest.raises(anthropic.APITimeoutError):
            ask_anthropic(server, timeout=0.3)
    finally:
        start = time.monotonic()
        server.stop()
    assert time.monotonic() - start < 1.0


def test_invalid_json_body() -> None:
    with LLMServer([Fault.invalid_json(), Fault.invalid_json()]) as server:
        with pytest.raises(json.JSONDecodeError):
            ask_openai(server)
        with pytest.raises(json.JSONDecodeError):
            ask_anthropic(server)


def test_truncated_body_is_a_connection_error() -> None:
    with LLMServer([Fault.truncated(), Fault.truncated()]) as server:
        with pytest.raises(openai.APIConnectionError):
            ask_openai(server)
        with pytest.raises(anthropic.APIConnectionError):
            ask_anthropic(server)


def test_global_and_per_reply_latency() -> None:
    with LLMServer(["fast", Reply(text="slow", latency=1.0)], latency=0.1) as server:
        start = time.monotonic()
        assert ask_openai(server) == "fast"
        first = time.monotonic() - start
        assert ask_openai(server) == "slow"
        second = time.monotonic() - start - first
    assert 0.1 <= first < 1.0  # the global latency only (the margin holds on a loaded machine)
    assert second >= 1.1  # the reply's own latency on top of the global one


def test_latency_can_change_while_running(llm_server: LLMServer) -> None:
    llm_server.push("a")
    llm_server.latency = 0.15
    start = time.monotonic()
    ask_openai(llm_server)
    assert time.monotonic() - start >= 0.15
