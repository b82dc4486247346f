"""`openai_agent`: the Chat Completions tool loop, through the real SDK, against the local server."""

from __future__ import annotations

import json

import pytest
from agent_helpers import model_agent, of_type, opened
from pydantic import BaseModel

from niceeval._core.errors import UsageError
from niceeval._core.events import ActionCalledEvent, ErrorEvent, MessageEvent, UsageEvent
from niceeval.agents import ModelAgent, ModelAgentOptions, openai_agent
from niceeval.testing import LLMServer, Reply, TokenUsage, ToolCall

pytestmark = pytest.mark.anyio


class Intent(BaseModel):
    intent: str
    order_id: str | None = None


def lookup_order(order_id: str) -> dict[str, str]:
    """Look an order up.

    Args:
        order_id: The order number.
    """
    return {"order_id": order_id, "status": "shipped"}


def cancel_order(order_id: str) -> str:
    """Cancel an order."""
    raise PermissionError(f"order {order_id} has already shipped")


def agent(server: LLMServer, **options: object) -> ModelAgent:
    return model_agent(openai_agent, "openai/test-model", server.base_url, **options)


async def test_the_model_calls_a_tool_gets_the_result_and_answers(llm_server: LLMServer) -> None:
    llm_server.push(
        Reply(text="Let me check.", tool_calls=[ToolCall(name="lookup_order", arguments={"order_id": "1234"})]),
        "Order 1234 has shipped.",
    )
    async with opened(agent(llm_server, system="You are support.", tools=[lookup_order])) as (session, log):
        reply = await session.send("Where is order 1234?")

    assert (reply.text, reply.status) == ("Order 1234 has shipped.", "completed")
    (action,) = of_type(log, "action.called")
    assert isinstance(action, ActionCalledEvent)
    assert (action.id, action.name, action.input, action.status) == (
        "call_0001",
        "lookup_order",
        {"order_id": "1234"},
        "success",
    )
    assert action.output == {"order_id": "1234", "status": "shipped"}
    assert [e.type for e in log.events] == ["message", "usage", "action.called", "usage", "message"]
    first, second = llm_server.requests
    assert first.system == "You are support."
    assert first.tools[0].name == "lookup_order"
    assert first.tools[0].parameters["properties"]["order_id"]["description"] == "The order number."
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "tool"]
    assert json.loads(second.messages[3].content) == {"order_id": "1234", "status": "shipped"}
    assert second.messages[3].tool_call_id == "call_0001"


async def test_a_failing_tool_is_recorded_and_the_loop_continues(llm_server: LLMServer) -> None:
    llm_server.push(ToolCall(name="cancel_order", arguments={"order_id": "9"}), "Sorry, it has already shipped.")
    async with opened(agent(llm_server, tools=[cancel_order])) as (session, log):
        reply = await session.send("Cancel order 9")

    assert reply.status == "completed" and reply.text == "Sorry, it has already shipped."
    (action,) = of_type(log, "action.called")
    assert isinstance(action, ActionCalledEvent)
    assert action.status == "failed" and action.error == "PermissionError: order 9 has already shipped"
    assert llm_server.requests[1].messages[-1].content == "Error: PermissionError: order 9 has already shipped"


async def test_structured_output_asks_for_a_strict_schema_and_validates_the_reply(llm_server: LLMServer) -> None:
    llm_server.push(Intent(intent="refund", order_id="1234"))
    async with opened(agent(llm_server, output=Intent)) as (session, log):
        reply = await session.send("I want a refund for order 1234")

    assert reply.data == Intent(intent="refund", order_id="1234")
    assert json.loads(reply.text) == {"intent": "refund", "order_id": "1234"}
    fmt = llm_server.requests[0].response_format
    assert fmt is not None and fmt["json_schema"]["name"] == "Intent" and fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["required"] == ["intent", "order_id"] and schema["additionalProperties"] is False
    message = of_type(log, "message")[-1]
    assert isinstance(message, MessageEvent) and message.data == reply.data


async def test_malformed_structured_output_fails_the_turn_visibly(llm_server: LLMServer) -> None:
    llm_server.push("{not json", {"wrong": "shape"})
    async with opened(agent(llm_server, output=Intent)) as (session, log):
        broken = await session.send("first")
        wrong = await session.send("second")

    assert (broken.status, broken.data, broken.text) == ("failed", None, "{not json")
    assert wrong.status == "failed"
    errors = of_type(log, "error")
    assert len(errors) == 2 and all(isinstance(e, ErrorEvent) and "not a valid Intent" in e.message for e in errors)


async def test_output_given_to_send_overrides_the_agents(llm_server: LLMServer) -> None:
    class Sentiment(BaseModel):
        positive: bool

    llm_server.push({"positive": True}, "plain text")
    async with opened(agent(llm_server, output=Intent)) as (session, _):
        structured = await session.send("Great!", output=Sentiment)
    async with opened(agent(llm_server)) as (session, _):
        plain = await session.send("hi")

    assert structured.data == Sentiment(positive=True)
    assert llm_server.requests[0].output_schema is not None
    assert llm_server.requests[0].output_schema["required"] == ["positive"]
    assert (plain.text, plain.data) == ("plain text", None)
    assert llm_server.requests[1].response_format is None


async def test_usage_counts_cached_prompt_tokens_apart(llm_server: LLMServer) -> None:
    llm_server.push(
        Reply(
            tool_calls=[ToolCall(name="lookup_order", arguments={"order_id": "1"})],
            usage=TokenUsage(input_tokens=1000, output_tokens=20, cached_tokens=800),
        ),
        Reply(text="done", usage=TokenUsage(input_tokens=1100, output_tokens=5)),
    )
    async with opened(agent(llm_server, tools=[lookup_order])) as (session, log):
        await session.send("go")

    usage = [e for e in log.events if isinstance(e, UsageEvent)]
    assert [(u.model, u.input_tokens, u.cache_read_tokens, u.output_tokens) for u in usage] == [
        ("openai/test-model", 200, 800, 20),
        ("openai/test-model", 1100, 0, 5),
    ]


async def test_max_steps_spent_fails_the_turn_with_an_error_event(llm_server: LLMServer) -> None:
    llm_server.set_script(lambda request: ToolCall(name="lookup_order", arguments={"order_id": "1"}))
    async with opened(agent(llm_server, tools=[lookup_order], max_steps=3)) as (session, log):
        reply = await session.send("loop forever")
        llm_server.set_script(["Recovered."])
        after = await session.send("and now?")

    assert reply.status == "failed"
    assert len(of_type(log, "action.called")) == 3
    (error,) = of_type(log, "error")
    assert isinstance(error, ErrorEvent) and error.error_type == "MaxStepsExceeded" and "max_steps=3" in error.message
    assert after.status == "completed"
    assert [m.role for m in llm_server.requests[-1].messages][-2:] == ["tool", "user"]


async def test_temperature_is_sent_only_when_given(llm_server: LLMServer) -> None:
    llm_server.push("a", "b")
    async with opened(agent(llm_server, temperature=0.2)) as (session, _):
        await session.send("x")
    async with opened(agent(llm_server)) as (session, _):
        await session.send("y")
    assert llm_server.requests[0].body["temperature"] == 0.2
    assert "temperature" not in llm_server.requests[1].body


@pytest.mark.parametrize(
    ("model", "hint"),
    [
        ("gpt-5-mini", "needs a provider prefix"),
        ("mistral/large", "unknown provider 'mistral'"),
        ("anthropic/claude-haiku-4-5", "use anthropic_agent"),
    ],
)
async def test_a_wrong_model_string_is_a_usage_error_at_construction(model: str, hint: str) -> None:
    with pytest.raises(UsageError, match=hint):
        openai_agent(model)


async def test_an_output_type_that_is_not_an_object_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="must describe a JSON object"):
        openai_agent("openai/m", output=list[int])
    with pytest.raises(UsageError, match=r"ModelAgentOptions\(max_steps=...\) must be a positive integer"):
        openai_agent("openai/m", options=ModelAgentOptions(max_steps=0))


async def test_a_turn_is_posted_as_built_without_the_sdks_parameter_transform(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import openai.resources.chat.completions.completions as sdk

    def transform(*args: object, **kwargs: object) -> None:
        raise AssertionError("the agent's request went through the SDK's parameter transform (0.2 ms of CPU)")

    monkeypatch.setattr(sdk, "async_maybe_transform", transform)
    llm_server.push("Shipped.")
    async with opened(agent(llm_server, system="You are support.", tools=[lookup_order])) as (session, _log):
        reply = await session.send("Where is order 1234?")
    assert reply.text == "Shipped."
    (request,) = llm_server.requests
    assert [m["role"] for m in request.body["messages"]] == ["system", "user"]
    assert request.body["tools"][0]["function"]["name"] == "lookup_order"
