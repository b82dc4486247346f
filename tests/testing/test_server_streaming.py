"""LLMServer streaming (`stream: true`) to the real SDKs: Chat Completions, Responses and Anthropic Messages."""

from __future__ import annotations

import json

import anthropic
import httpx
import openai
import pytest
from anthropic.types import TextBlock, ToolUseBlock

from niceeval.testing import Fault, LLMServer, Reply, TokenUsage, ToolCall

USER: list[openai.types.chat.ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def oai(server: LLMServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)


def claude(server: LLMServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="k", max_retries=0)


def test_chat_stream_sends_the_text_in_word_deltas(llm_server: LLMServer) -> None:
    llm_server.push("The capital of France is Paris.")
    with oai(llm_server) as c:
        chunks = list(c.chat.completions.create(model="m", messages=USER, stream=True))
    deltas = [ch.choices[0].delta.content for ch in chunks if ch.choices and ch.choices[0].delta.content]
    assert deltas == ["The ", "capital ", "of ", "France ", "is ", "Paris."]
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(ch.usage is None for ch in chunks)
    assert llm_server.requests[0].stream


def test_chat_stream_ends_with_usage_when_asked() -> None:
    usage = TokenUsage(input_tokens=50, output_tokens=5, cached_tokens=20)
    with LLMServer([Reply(text="ok", usage=usage)]) as server, oai(server) as c:
        chunks = list(
            c.chat.completions.create(model="m", messages=USER, stream=True, stream_options={"include_usage": True})
        )
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (50, 5)
    assert last.usage.prompt_tokens_details is not None and last.usage.prompt_tokens_details.cached_tokens == 20


def test_chat_stream_tool_calls_assemble_through_the_sdk_helper(llm_server: LLMServer) -> None:
    llm_server.push(Reply(tool_calls=[ToolCall(name="a", arguments={"x": 1}), ToolCall(name="b", arguments={"y": 2})]))
    with oai(llm_server) as c, c.chat.completions.stream(model="m", messages=USER) as stream:
        final = stream.get_final_completion()
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert [(call.id, call.function.name, json.loads(call.function.arguments)) for call in calls] == [  # type: ignore[union-attr]
        ("call_0001", "a", {"x": 1}),
        ("call_0002", "b", {"y": 2}),
    ]


def test_responses_stream_events_in_order(llm_server: LLMServer) -> None:
    llm_server.push("Hello there")
    with oai(llm_server) as c:
        events = list(c.responses.create(model="m", input="hi", stream=True))
    assert [e.type for e in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    completed = events[-1]
    assert completed.type == "response.completed"
    assert completed.response.output_text == "Hello there" and completed.response.usage is not None


def test_responses_stream_function_call_through_the_sdk_helper(llm_server: LLMServer) -> None:
    usage = TokenUsage(input_tokens=30, output_tokens=4, cached_tokens=10)
    llm_server.push(Reply(tool_calls=[ToolCall(name="lookup", arguments={"q": "x"})], usage=usage))
    with oai(llm_server) as c, c.responses.stream(model="m", input="hi") as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert "response.function_call_arguments.delta" in kinds
    (call,) = final.output
    assert call.type == "function_call"
    assert (call.call_id, call.name, json.loads(call.arguments)) == ("call_0001", "lookup", {"q": "x"})
    assert final.usage is not None and final.usage.input_tokens_details.cached_tokens == 10


def test_anthropic_stream_text_through_the_sdk_helper() -> None:
    usage = TokenUsage(input_tokens=40, output_tokens=6, cached_tokens=30)
    with LLMServer([Reply(text="Bonjour tout le monde", usage=usage)]) as server, claude(server) as c:
        with c.messages.stream(model="claude", max_tokens=50, messages=[{"role": "user", "content": "hi"}]) as stream:
            texts = list(stream.text_stream)
            final = stream.get_final_message()
    assert texts == ["Bonjour ", "tout ", "le ", "monde"]
    (block,) = final.content
    assert isinstance(block, TextBlock) and block.text == "Bonjour tout le monde"
    assert final.stop_reason == "end_turn"
    assert (final.usage.input_tokens, final.usage.cache_read_input_tokens, final.usage.output_tokens) == (10, 30, 6)


def test_anthropic_stream_tool_use(llm_server: LLMServer) -> None:
    llm_server.push(Reply(text="Let me look.", tool_calls=[ToolCall(name="lookup", arguments={"q": "x"})]))
    with claude(llm_server) as c:
        with c.messages.stream(model="claude", max_tokens=50, messages=[{"role": "user", "content": "hi"}]) as stream:
            final = stream.get_final_message()
    text, tool = final.content
    assert isinstance(text, TextBlock) and text.text == "Let me look."
    assert isinstance(tool, ToolUseBlock) and (tool.id, tool.name, tool.input) == ("toolu_0001", "lookup", {"q": "x"})
    assert final.stop_reason == "tool_use"


def test_a_fault_answers_a_stream_with_the_error_status(llm_server: LLMServer) -> None:
    llm_server.push(Fault.rate_limit())
    with oai(llm_server) as c, pytest.raises(openai.RateLimitError):
        c.responses.create(model="m", input="hi", stream=True)


def test_a_truncated_stream_breaks_off_mid_way(llm_server: LLMServer) -> None:
    llm_server.push(Fault.truncated())
    with oai(llm_server) as c, pytest.raises((openai.APIConnectionError, httpx.RemoteProtocolError)):
        list(c.chat.completions.create(model="m", messages=USER, stream=True))


@pytest.mark.anyio
async def test_async_streams(llm_server: LLMServer) -> None:
    llm_server.push("one two", "three four")
    async with openai.AsyncOpenAI(base_url=llm_server.base_url, api_key="k", max_retries=0) as c:
        chat = [ch async for ch in await c.chat.completions.create(model="m", messages=USER, stream=True)]
        async with c.responses.stream(model="m", input="hi") as stream:
            response = await stream.get_final_response()
    assert "".join(ch.choices[0].delta.content or "" for ch in chat if ch.choices) == "one two"
    assert response.output_text == "three four"
