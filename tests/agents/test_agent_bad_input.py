"""Bad input and bad days: raising agents and tools, provider faults, hangs, huge replies. Nothing crashes silently."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from agent_helpers import FAST_RETRY, model_agent, of_type, opened

from niceeval import providers
from niceeval._core.errors import UsageError
from niceeval._core.events import ActionCalledEvent, EventLog, MessageEvent
from niceeval.agents import FunctionAgent, ModelAgent, answer_followup, anthropic_agent, openai_agent
from niceeval.providers import ProviderError, _limiter
from niceeval.testing import Fault, LLMServer, Reply, ToolCall

pytestmark = pytest.mark.anyio
AgentFactory = Callable[..., ModelAgent]


@pytest.fixture(autouse=True)
def fresh_limiters(monkeypatch: pytest.MonkeyPatch) -> None:
    """429s halve the shared per-provider limiter; keep that from leaking into other tests."""
    monkeypatch.setattr(_limiter, "_limiters", {})


def make_openai(server: LLMServer, **options: object) -> ModelAgent:
    options = {"retry": FAST_RETRY, **options}
    return model_agent(openai_agent, "openai/test-model", server.base_url, **options)


def make_anthropic(server: LLMServer, **options: object) -> ModelAgent:
    options = {"retry": FAST_RETRY, **options}
    return model_agent(anthropic_agent, "anthropic/claude-haiku-4-5", server.anthropic_base_url, **options)


BOTH = pytest.mark.parametrize("make", [make_openai, make_anthropic], ids=["openai", "anthropic"])


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


async def test_a_function_agent_raising_mid_turn_propagates_and_the_session_goes_on() -> None:
    calls: list[str] = []

    def flaky(message: str) -> str:
        calls.append(message)
        if message == "explode":
            raise RuntimeError("the agent crashed")
        return f"ok: {message}"

    async with opened(FunctionAgent(flaky)) as (session, log):
        with pytest.raises(RuntimeError, match="the agent crashed"):
            await session.send("explode")
        reply = await session.send("again")
    assert reply.text == "ok: again"
    assert [(e.role, e.text) for e in log.events if isinstance(e, MessageEvent)] == [
        ("user", "explode"),
        ("user", "again"),
        ("assistant", "ok: again"),
    ]


@BOTH
async def test_a_turn_failing_mid_way_leaves_the_conversation_as_it_was(
    make: AgentFactory, llm_server: LLMServer
) -> None:
    llm_server.push(ToolCall(name="lookup", arguments={"key": "a"}), Fault.server_error(should_retry=False))
    async with opened(make(llm_server, tools=[lookup], retry=providers.RetryPolicy(max_retries=0))) as (session, log):
        with pytest.raises(ProviderError, match="HTTP 500"):
            await session.send("look a up")
        llm_server.push("fresh start")
        reply = await session.send("hello")

    assert reply.text == "fresh start"
    (action,) = of_type(log, "action.called")
    assert isinstance(action, ActionCalledEvent) and action.status == "success"
    assert [m.role for m in llm_server.requests[-1].messages] == ["user"]


@BOTH
@pytest.mark.parametrize(
    ("fault", "cause", "hint", "attempts"),
    [
        (
            Fault.unauthorized(),
            "provider_error",
            "HTTP 401 from the provider: Invalid API key (injected). (check the API key",
            1,
        ),
        (Fault.rate_limit(), "rate_limited", "rate limited (HTTP 429) (gave up after 3 attempts)", 3),
        (Fault.server_error(), "provider_error", "HTTP 500 from the provider", 3),
        (Fault.invalid_json(), "parse_error", "the provider's response was not valid JSON", 3),
    ],
    ids=["401", "429", "500", "invalid-json"],
)
async def test_provider_faults_raise_a_clear_error_naming_provider_and_model(
    make: AgentFactory, llm_server: LLMServer, fault: Fault, cause: str, hint: str, attempts: int
) -> None:
    llm_server.faults = lambda request: fault
    agent = make(llm_server)
    async with opened(agent) as (session, _):
        with pytest.raises(ProviderError) as caught:
            await session.send("hi")
    error = caught.value
    assert str(error).startswith(f"{agent.model}: ") and hint in str(error)
    assert error.cause == cause and error.model == agent.model
    assert len(llm_server.requests) == attempts


@BOTH
async def test_a_model_that_never_answers_times_out(make: AgentFactory, llm_server: LLMServer) -> None:
    llm_server.push(Fault.hang())
    async with opened(make(llm_server, timeout=0.2, retry=providers.RetryPolicy(max_retries=0))) as (session, _):
        started = time.monotonic()
        with pytest.raises(ProviderError, match="the request timed out") as caught:
            await session.send("hi")
    assert caught.value.cause == "timeout"
    assert time.monotonic() - started < 2


@BOTH
async def test_a_10_mb_reply_is_handled_whole(make: AgentFactory, llm_server: LLMServer) -> None:
    huge = "word " * 2_000_000
    llm_server.push(Reply(text=huge))
    async with opened(make(llm_server)) as (session, log):
        reply = await session.send("write a lot")
    assert len(reply.text) == 10_000_000
    message = log.events[-1]
    assert isinstance(message, MessageEvent) and len(message.text) == 10_000_000


async def test_no_api_key_fails_when_the_session_opens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    agent = openai_agent("openai/gpt-5-mini")
    with pytest.raises(ProviderError, match="no API key for openai: set OPENAI_API_KEY") as caught:
        await agent.open("s", EventLog())
    assert caught.value.cause == "no_api_key"


async def test_unknown_provider_prefixes_are_usage_errors() -> None:
    for build in (openai_agent, anthropic_agent):
        with pytest.raises(UsageError, match="unknown provider 'gemini'"):
            build("gemini/pro")
    with pytest.raises(UsageError, match="unknown provider 'gemini'"):
        await answer_followup("Which one?", [], model="gemini/pro")


async def test_a_raising_tool_validator_is_a_bug_that_propagates(llm_server: LLMServer) -> None:
    def broken(name: str, arguments: dict[str, object]) -> str | None:
        raise KeyError("validator bug")

    llm_server.push(ToolCall(name="lookup", arguments={"key": "a"}))
    async with opened(make_openai(llm_server, tools=[lookup], tool_validator=broken)) as (session, _):
        with pytest.raises(KeyError, match="validator bug"):
            await session.send("go")
