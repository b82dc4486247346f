"""A judge that cannot give a verdict is inconclusive, with a cause and a reason that says what happened."""

from __future__ import annotations

import time

import pytest
from judge_helpers import ANTHROPIC, OPENAI, PROVIDER_MODELS, RUBRIC_PASS, Run, always

from niceeval.providers import RetryPolicy
from niceeval.testing import Fault, LLMServer, fail_first


def only(run: Run, model: str = OPENAI) -> object:
    (result,) = run(lambda t: t.rubric("Is it polite?", model=model))
    return result


@pytest.mark.parametrize("model", PROVIDER_MODELS)
def test_timeout_is_inconclusive(run: Run, model: str) -> None:
    run.server.set_script(lambda request: Fault.hang())
    run.settings = {"model": model, "timeout": 0.2}
    run.retry = RetryPolicy(max_retries=0)
    started = time.monotonic()
    (result,) = run(lambda t: t.rubric("Is it polite?"))
    assert time.monotonic() - started < 15  # the 0.2 s timeout ended it (the hang never answers); margin for load
    assert (result.state, result.score, result.cause) == ("inconclusive", None, "timeout")
    assert result.reason.startswith(f"judge unavailable: {model}: the request timed out")


@pytest.mark.parametrize("model", PROVIDER_MODELS)
def test_429_after_retries_is_rate_limited(run: Run, model: str) -> None:
    run.server.set_script(lambda request: Fault.rate_limit(retry_after=0.001))
    (result,) = run(lambda t: t.rubric("Is it polite?", model=model))
    assert (result.state, result.cause) == ("inconclusive", "rate_limited")
    assert "rate limited (HTTP 429)" in result.reason and "no fallback judge was used" in result.reason
    assert len(run.server.requests) == 3  # the first try and FAST's two retries


@pytest.mark.parametrize("model", PROVIDER_MODELS)
def test_server_error_is_provider_error(run: Run, model: str) -> None:
    run.server.set_script(lambda request: Fault.server_error(500))
    (result,) = run(lambda t: t.rubric("Is it polite?", model=model))
    assert (result.state, result.cause) == ("inconclusive", "provider_error")
    assert "HTTP 500" in result.reason


def test_unauthorized_is_provider_error_without_retries(run: Run) -> None:
    run.server.set_script(lambda request: Fault.unauthorized())
    (result,) = run(lambda t: t.rubric("Is it polite?"))
    assert (result.state, result.cause) == ("inconclusive", "provider_error")
    assert "HTTP 401" in result.reason and "check the API key" in result.reason
    assert len(run.server.requests) == 1


@pytest.mark.parametrize("model", PROVIDER_MODELS)
def test_garbage_answer_is_parse_error_after_one_repair(run: Run, model: str) -> None:
    run.server.set_script(lambda request: "this is not JSON at all")
    (result,) = run(lambda t: t.rubric("Is it polite?", model=model))
    assert (result.state, result.cause) == ("inconclusive", "parse_error")
    assert "did not fit the schema, even after a repair turn" in result.reason
    assert len(run.server.requests) == 2
    repair = run.server.requests[1]
    assert [m.role for m in repair.messages] == ["system", "user", "assistant", "user"]
    assert repair.messages[2].content == "this is not JSON at all"
    assert "not valid JSON" in repair.messages[3].content
    assert result.judge_calls[0].messages[-1]["content"] == repair.messages[3].content


def test_broken_response_body_is_parse_error(run: Run) -> None:
    run.server.set_script(lambda request: Fault.invalid_json())
    (result,) = run(lambda t: t.rubric("Is it polite?"))
    assert (result.state, result.cause) == ("inconclusive", "parse_error")


@pytest.mark.parametrize("model", PROVIDER_MODELS)
def test_no_api_key_is_inconclusive(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch, model: str) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", llm_server.anthropic_base_url)
    run = Run(server=llm_server, keys=None)
    (result,) = run(lambda t: t.rubric("Is it polite?", model=model))
    assert (result.state, result.cause) == ("inconclusive", "no_api_key")
    assert "no API key" in result.reason and ("OPENAI_API_KEY" in result.reason or "ANTHROPIC" in result.reason)
    assert llm_server.requests == []


def test_retry_after_is_honoured(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    run.server.faults = fail_first(1, fault=Fault.rate_limit(retry_after=0.3))
    run.retry = RetryPolicy(max_retries=2, base_delay=5.0, max_delay=10.0)
    started = time.monotonic()
    (result,) = run(lambda t: t.rubric("Is it polite?"))
    elapsed = time.monotonic() - started
    assert result.state == "passed" and len(run.server.requests) == 2
    assert 0.3 <= elapsed < 2.0, elapsed  # waited Retry-After, not the 2.5 s+ backoff


def test_fallback_answers_when_the_primary_is_rate_limited(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    run.server.faults = lambda request: Fault.rate_limit(retry_after=0.001) if request.provider == "openai" else None
    run.settings = {"model": OPENAI, "fallback": ANTHROPIC}
    (result,) = run(lambda t: t.rubric("Is it polite?"))
    assert (result.state, result.score) == ("passed", 0.9)
    assert result.reason.startswith(f"{OPENAI}: rate limited (HTTP 429)")
    assert result.reason.endswith(f"fallback {ANTHROPIC} answered: polite and on topic")
    primary, fallback = result.judge_calls
    assert (primary.model, primary.cause, primary.fallback) == (OPENAI, "rate_limited", False)
    assert (fallback.model, fallback.cause, fallback.fallback, fallback.score) == (ANTHROPIC, None, True, 0.9)


def test_both_judges_down_is_inconclusive_with_the_primary_cause(run: Run) -> None:
    run.server.set_script(lambda request: Fault.server_error(503) if request.provider == "anthropic" else "garbage")
    run.settings = {"model": OPENAI, "fallback": ANTHROPIC}
    (result,) = run(lambda t: t.rubric("Is it polite?"))
    assert (result.state, result.cause) == ("inconclusive", "parse_error")
    assert f"; {ANTHROPIC}: HTTP 503" in result.reason
    assert [c.cause for c in result.judge_calls] == ["parse_error", "provider_error"]


def test_optional_inconclusive_is_marked(run: Run) -> None:
    run.server.set_script(lambda request: Fault.server_error(500))
    (result,) = run(lambda t: t.rubric("Is it polite?").optional())
    assert result.state == "inconclusive" and result.optional
