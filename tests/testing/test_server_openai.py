"""LLMServer speaking OpenAI Chat Completions to the real `openai` SDK, sync and async, over HTTP."""

from __future__ import annotations

import json

import openai
import pytest
from pydantic import BaseModel

from niceeval.testing import LLMServer, Reply, TokenUsage, ToolCall, estimate_tokens

WEATHER_TOOL: openai.types.chat.ChatCompletionToolParam = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def client(server: LLMServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)


def test_text_reply_with_estimated_usage(llm_server: LLMServer) -> None:
    llm_server.push("Paris")
    prompt = "What is the capital of France?"
    with client(llm_server) as c:
        completion = c.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
        )
    assert completion.object == "chat.completion"
    assert completion.model == "gpt-4o-mini"
    assert completion.id == "chatcmpl-0001"
    choice = completion.choices[0]
    assert choice.message.content == "Paris"
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.prompt_tokens == estimate_tokens(prompt) == 8
    assert completion.usage.completion_tokens == estimate_tokens("Paris") == 2
    assert completion.usage.total_tokens == 10
    assert completion.usage.prompt_tokens_details is not None
    assert completion.usage.prompt_tokens_details.cached_tokens == 0


def test_usage_override_reports_cached_tokens() -> None:
    usage = TokenUsage(input_tokens=100, output_tokens=7, cached_tokens=40)
    with LLMServer([Reply(text="ok", usage=usage)]) as server, client(server) as c:
        completion = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (100, 7)
    assert completion.usage.total_tokens == 107
    assert completion.usage.prompt_tokens_details is not None
    assert completion.usage.prompt_tokens_details.cached_tokens == 40


def test_tool_call_round_trip(llm_server: LLMServer) -> None:
    llm_server.push(ToolCall(name="get_weather", arguments={"city": "Paris"}), "Sunny in Paris.")
    messages: list[openai.types.chat.ChatCompletionMessageParam] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    with client(llm_server) as c:
        first = c.chat.completions.create(model="m", messages=messages, tools=[WEATHER_TOOL])
        assert first.choices[0].finish_reason == "tool_calls"
        assert first.choices[0].message.content is None
        calls = first.choices[0].message.tool_calls
        assert calls is not None and len(calls) == 1
        call = calls[0]
        assert call.type == "function" and call.id == "call_0001"
        assert call.function.name == "get_weather"
        assert json.loads(call.function.arguments) == {"city": "Paris"}

        function = {"name": call.function.name, "arguments": call.function.arguments}
        messages.append(
            {"role": "assistant", "tool_calls": [{"id": call.id, "type": "function", "function": function}]}
        )
        messages.append({"role": "tool", "tool_call_id": call.id, "content": "18C, sunny"})
        second = c.chat.completions.create(model="m", messages=messages, tools=[WEATHER_TOOL])
    assert second.choices[0].message.content == "Sunny in Paris."

    sent = llm_server.requests
    assert [t.name for t in sent[0].tools] == ["get_weather"]
    assert sent[0].tools[0].parameters["required"] == ["city"]
    assert sent[0].system == "You are terse."
    assert [m.role for m in sent[1].messages] == ["system", "user", "assistant", "tool"]
    assistant, tool = sent[1].messages[2:]
    assert assistant.tool_calls == [ToolCall(id="call_0001", name="get_weather", arguments={"city": "Paris"})]
    assert (tool.tool_call_id, tool.content) == ("call_0001", "18C, sunny")


class Capital(BaseModel):
    city: str
    population_millions: float


def test_structured_output_with_parse(llm_server: LLMServer) -> None:
    llm_server.push(Capital(city="Paris", population_millions=2.1))
    with client(llm_server) as c:
        completion = c.chat.completions.parse(
            model="m", messages=[{"role": "user", "content": "Capital of France?"}], response_format=Capital
        )
    assert completion.choices[0].message.parsed == Capital(city="Paris", population_millions=2.1)
    schema = llm_server.requests[0].output_schema
    assert schema is not None and set(schema["properties"]) == {"city", "population_millions"}


def test_json_object_reply_from_dict(llm_server: LLMServer) -> None:
    llm_server.push({"verdict": "pass", "score": 0.9})
    with client(llm_server) as c:
        completion = c.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "Judge this."}],
            response_format={"type": "json_object"},
        )
    content = completion.choices[0].message.content
    assert content is not None and json.loads(content) == {"verdict": "pass", "score": 0.9}
    assert llm_server.requests[0].response_format == {"type": "json_object"}
    assert llm_server.requests[0].output_schema is None


def test_records_what_the_sdk_sent(llm_server: LLMServer) -> None:
    llm_server.push("ok")
    with client(llm_server) as c:
        c.chat.completions.create(
            model="gpt-4o-mini",
            messages=[
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "Grade:"}, {"type": "text", "text": "A"}],
                }
            ],
            temperature=0.0,
        )
    (request,) = llm_server.requests
    assert request.provider == "openai"
    assert request.model == "gpt-4o-mini"
    assert request.last_user_text == "Grade:\nA"
    assert request.body["temperature"] == 0.0
    assert request.headers["authorization"] == "Bearer test-key"


def test_lists_models() -> None:
    with LLMServer(models=["gpt-a", "gpt-b"]) as server, client(server) as c:
        assert [m.id for m in c.models.list()] == ["gpt-a", "gpt-b"]


@pytest.mark.anyio
async def test_async_client_text_and_tool_calls() -> None:
    script = [ToolCall(name="get_weather", arguments={"city": "Oslo"}, id="call_fixed"), "Cold."]
    async with LLMServer(script) as server:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as c:
            first = await c.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "Oslo?"}], tools=[WEATHER_TOOL]
            )
            second = await c.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "And?"}]
            )
    calls = first.choices[0].message.tool_calls
    assert calls is not None and calls[0].id == "call_fixed"
    assert second.choices[0].message.content == "Cold."
    assert server.remaining == 0
