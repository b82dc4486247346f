"""LLMServer speaking Anthropic Messages to the real `anthropic` SDK, sync and async, over HTTP."""

from __future__ import annotations

import json

import anthropic
import pytest
from anthropic.types import MessageParam, TextBlock, ToolParam, ToolUseBlock
from pydantic import BaseModel

from niceeval.testing import LLMServer, Reply, TokenUsage, ToolCall, estimate_tokens

WEATHER_TOOL: ToolParam = {
    "name": "get_weather",
    "description": "Weather for a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def client(server: LLMServer) -> anthropic.Anthropic:
    # The SDK adds /v1/messages itself, so its base_url is the server root, without /v1.
    return anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="test-key", max_retries=0)


def test_text_reply_with_estimated_usage(llm_server: LLMServer) -> None:
    llm_server.push("Paris")
    prompt = "What is the capital of France?"
    with client(llm_server) as c:
        message = c.messages.create(
            model="claude-haiku-4-5",
            max_tokens=100,
            system="Answer in one word.",
            messages=[{"role": "user", "content": prompt}],
        )
    assert message.type == "message" and message.role == "assistant"
    assert message.id == "msg_0001"
    assert message.model == "claude-haiku-4-5"
    assert message.content == [TextBlock(type="text", text="Paris")]
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens == estimate_tokens("Answer in one word.\n" + prompt) == 13
    assert message.usage.output_tokens == estimate_tokens("Paris") == 2
    assert message.usage.cache_read_input_tokens == 0

    (request,) = llm_server.requests
    assert request.provider == "anthropic"
    assert [m.role for m in request.messages] == ["system", "user"]
    assert request.system == "Answer in one word."
    assert request.last_user_text == prompt
    assert request.body["max_tokens"] == 100
    assert request.headers["anthropic-version"]


def test_cached_tokens_are_reported_apart_from_input_tokens() -> None:
    usage = TokenUsage(input_tokens=100, output_tokens=7, cached_tokens=40)
    with LLMServer([Reply(text="ok", usage=usage)]) as server, client(server) as c:
        message = c.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert message.usage.input_tokens == 60
    assert message.usage.cache_read_input_tokens == 40
    assert message.usage.output_tokens == 7


def test_tool_use_round_trip(llm_server: LLMServer) -> None:
    llm_server.push(
        Reply(text="Let me check.", tool_calls=[ToolCall(name="get_weather", arguments={"city": "Paris"})]),
        "Sunny in Paris.",
    )
    messages: list[MessageParam] = [{"role": "user", "content": "Weather in Paris?"}]
    with client(llm_server) as c:
        first = c.messages.create(model="m", max_tokens=100, messages=messages, tools=[WEATHER_TOOL])
        assert first.stop_reason == "tool_use"
        text, tool_use = first.content
        assert text == TextBlock(type="text", text="Let me check.")
        assert isinstance(tool_use, ToolUseBlock)
        assert (tool_use.id, tool_use.name, tool_use.input) == (
            "toolu_0001",
            "get_weather",
            {"city": "Paris"},
        )

        messages.append({"role": "assistant", "content": first.content})
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": tool_use.id, "content": "18C, sunny"},
                    {"type": "text", "text": "Summarise."},
                ],
            }
        )
        second = c.messages.create(model="m", max_tokens=100, messages=messages, tools=[WEATHER_TOOL])
    assert second.content == [TextBlock(type="text", text="Sunny in Paris.")]

    sent = llm_server.requests
    assert sent[0].tools[0].name == "get_weather"
    assert sent[0].tools[0].parameters == WEATHER_TOOL["input_schema"]
    assert [m.role for m in sent[1].messages] == ["user", "assistant", "tool", "user"]
    assistant, result, follow_up = sent[1].messages[1:]
    assert assistant.content == "Let me check."
    assert assistant.tool_calls == [
        ToolCall(id="toolu_0001", name="get_weather", arguments={"city": "Paris"})
    ]
    assert (result.tool_call_id, result.content) == ("toolu_0001", "18C, sunny")
    assert follow_up.content == "Summarise."


class Verdict(BaseModel):
    passed: bool
    reason: str


def test_structured_output_with_parse(llm_server: LLMServer) -> None:
    llm_server.push({"passed": True, "reason": "cites the source"})
    with client(llm_server) as c:
        message = c.messages.parse(
            model="m", max_tokens=100, messages=[{"role": "user", "content": "Judge."}], output_format=Verdict
        )
    assert message.parsed_output == Verdict(passed=True, reason="cites the source")
    block = message.content[0]
    assert isinstance(block, TextBlock) and json.loads(block.text) == {
        "passed": True,
        "reason": "cites the source",
    }
    schema = llm_server.requests[0].output_schema
    assert schema is not None and set(schema["properties"]) == {"passed", "reason"}


def test_lists_models_in_anthropic_shape() -> None:
    with LLMServer(models=["claude-a"]) as server, client(server) as c:
        (model,) = c.models.list()
    assert (model.id, model.type, model.display_name) == ("claude-a", "model", "claude-a")


def test_counts_tokens_without_using_up_the_script() -> None:
    text = "Count me, please: " + "word " * 40
    with LLMServer(["unused"]) as server, client(server) as c:
        counted = c.messages.count_tokens(model="m", messages=[{"role": "user", "content": text}])
        assert server.requests == [] and server.remaining == 1
    assert counted.input_tokens == estimate_tokens(text)


def test_count_tokens_rejects_a_request_without_messages() -> None:
    with LLMServer() as server, client(server) as c, pytest.raises(anthropic.BadRequestError, match="messages"):
        c.messages.count_tokens(model="m", messages=[])


def test_openai_base_url_in_an_anthropic_client_gets_a_hint() -> None:
    with LLMServer(["unused"]) as server:
        wrong = anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0)
        with wrong, pytest.raises(anthropic.NotFoundError, match="anthropic_base_url"):
            wrong.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
        assert server.requests == []


@pytest.mark.anyio
async def test_async_client() -> None:
    async with LLMServer(["Bonjour"]) as server:
        async with anthropic.AsyncAnthropic(
            base_url=server.anthropic_base_url, api_key="k", max_retries=0
        ) as c:
            message = await c.messages.create(
                model="m", max_tokens=10, messages=[{"role": "user", "content": "Say hello in French"}]
            )
    assert message.content == [TextBlock(type="text", text="Bonjour")]
    assert server.requests[0].last_user_text == "Say hello in French"
