"""LLMServer speaking the OpenAI Responses API (`POST /v1/responses`) to the real `openai` SDK."""

from __future__ import annotations

import json

import openai
import pytest
from openai.types.responses import FunctionToolParam, ResponseFunctionToolCall, ResponseOutputMessage
from pydantic import BaseModel

from niceeval.testing import LLMServer, Message, Reply, TokenUsage, ToolCall, estimate_tokens

WEATHER: FunctionToolParam = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "strict": True,
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def client(server: LLMServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)


def test_text_reply_with_instructions_as_system(llm_server: LLMServer) -> None:
    llm_server.push("Paris")
    with client(llm_server) as c:
        response = c.responses.create(model="gpt-5-mini", input="Capital of France?", instructions="Be terse.")
    assert response.object == "response" and response.status == "completed"
    assert response.id == "resp_0001" and response.model == "gpt-5-mini"
    assert response.output_text == "Paris"
    (item,) = response.output
    assert isinstance(item, ResponseOutputMessage) and item.role == "assistant"
    (request,) = llm_server.requests
    assert (request.provider, request.api) == ("openai", "responses")
    assert request.system == "Be terse."
    assert request.last_user_text == "Capital of France?"


def test_usage_counts_cached_tokens_inside_input() -> None:
    usage = TokenUsage(input_tokens=120, output_tokens=9, cached_tokens=100)
    with LLMServer([Reply(text="ok", usage=usage)]) as server, client(server) as c:
        response = c.responses.create(model="m", input="hi")
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (120, 9, 129)
    assert response.usage.input_tokens_details.cached_tokens == 100


def test_usage_is_estimated_when_not_scripted(llm_server: LLMServer) -> None:
    llm_server.push("Paris")
    with client(llm_server) as c:
        response = c.responses.create(model="m", input="What is the capital of France?")
    assert response.usage is not None
    assert response.usage.input_tokens == estimate_tokens("What is the capital of France?")
    assert response.usage.output_tokens == estimate_tokens("Paris")


def test_function_call_round_trip(llm_server: LLMServer) -> None:
    llm_server.push(ToolCall(name="get_weather", arguments={"city": "Paris"}), "Sunny in Paris.")
    with client(llm_server) as c:
        first = c.responses.create(model="m", input="Weather in Paris?", tools=[WEATHER])
        (call,) = first.output
        assert isinstance(call, ResponseFunctionToolCall)
        assert (call.call_id, call.name, json.loads(call.arguments)) == ("call_0001", "get_weather", {"city": "Paris"})
        second = c.responses.create(
            model="m",
            input=[
                {"role": "user", "content": "Weather in Paris?"},
                {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
                {"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 21C"},
            ],
            tools=[WEATHER],
        )
    assert second.output_text == "Sunny in Paris."
    offered = llm_server.requests[0].tools[0]
    assert (offered.name, offered.parameters["required"]) == ("get_weather", ["city"])
    asked = ToolCall(id="call_0001", name="get_weather", arguments={"city": "Paris"})
    assert llm_server.requests[1].messages == [
        Message(role="user", content="Weather in Paris?"),
        Message(role="assistant", tool_calls=[asked]),
        Message(role="tool", content="sunny, 21C", tool_call_id="call_0001"),
    ]


def test_text_and_parallel_calls_in_one_response(llm_server: LLMServer) -> None:
    llm_server.push(Reply(text="Checking both.", tool_calls=[ToolCall(name="a"), ToolCall(name="b")]))
    with client(llm_server) as c:
        response = c.responses.create(model="m", input="go")
    assert [item.type for item in response.output] == ["message", "function_call", "function_call"]
    assert response.output_text == "Checking both."


def test_input_parts_are_read_as_text(llm_server: LLMServer) -> None:
    llm_server.push("ok")
    with client(llm_server) as c:
        c.responses.create(
            model="m",
            input=[
                {"role": "developer", "content": [{"type": "input_text", "text": "Rules."}]},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hello"}]},
            ],
        )
    (request,) = llm_server.requests
    assert request.system == "Rules." and request.last_user_text == "Hello"


class Answer(BaseModel):
    city: str


def test_structured_output_through_parse(llm_server: LLMServer) -> None:
    llm_server.push(Answer(city="Paris"))
    with client(llm_server) as c:
        parsed = c.responses.parse(model="m", input="Where?", text_format=Answer)
    assert parsed.output_parsed == Answer(city="Paris")
    schema = llm_server.requests[0].output_schema
    assert schema is not None and schema["properties"] == {"city": {"title": "City", "type": "string"}}


def test_a_request_without_input_gets_a_400_naming_the_field(llm_server: LLMServer) -> None:
    with client(llm_server) as c, pytest.raises(openai.BadRequestError, match="`input` is required"):
        c.responses.create(model="m", input=[])


def test_broken_function_call_arguments_get_a_400(llm_server: LLMServer) -> None:
    item = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{not json"}
    with client(llm_server) as c, pytest.raises(openai.BadRequestError, match=r"input\[0\]\.arguments"):
        c.responses.create(model="m", input=[item])  # type: ignore[list-item]


@pytest.mark.anyio
async def test_async_client(llm_server: LLMServer) -> None:
    llm_server.push("Paris")
    async with openai.AsyncOpenAI(base_url=llm_server.base_url, api_key="k", max_retries=0) as c:
        response = await c.responses.create(model="m", input="Capital?")
    assert response.output_text == "Paris"
