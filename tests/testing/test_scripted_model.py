"""ScriptedModel: the same scripts in process, on both anyio backends."""

from __future__ import annotations

import anyio
import pytest
from pydantic import BaseModel

from niceeval.testing import (
    Fault,
    InjectedFaultError,
    LLMRequest,
    Message,
    Reply,
    ScriptedModel,
    ScriptExhaustedError,
    TokenUsage,
    ToolCall,
    fail_first,
)

pytestmark = pytest.mark.anyio


class Capital(BaseModel):
    city: str


async def test_replies_are_resolved_and_requests_recorded() -> None:
    model = ScriptedModel(["Paris", ToolCall(name="lookup", arguments={"q": "France"}), Capital(city="Rome")])
    text = await model.complete("Capital of France?")
    assert text.text == "Paris"
    assert text.usage == TokenUsage(input_tokens=5, output_tokens=2)

    tool = await model.complete(LLMRequest(messages=[Message(role="user", content="Look it up")]))
    assert tool.tool_calls == [ToolCall(id="call_0001", name="lookup", arguments={"q": "France"})]

    data = await model.complete("Capital of Italy?")
    assert data.data == {"city": "Rome"} == Reply(data=Capital(city="Rome")).data  # type: ignore[arg-type]
    assert data.content == '{"city": "Rome"}'

    assert [r.last_user_text for r in model.requests] == [
        "Capital of France?",
        "Look it up",
        "Capital of Italy?",
    ]
    assert model.remaining == 0
    with pytest.raises(ScriptExhaustedError, match="ran out of replies"):
        await model.complete("More?")


async def test_faults_raise_and_hangs_wait() -> None:
    model = ScriptedModel([Fault.rate_limit(retry_after=3), Fault.hang()])
    with pytest.raises(InjectedFaultError) as error:
        await model.complete("a")
    assert error.value.fault.status == 429 and error.value.fault.retry_after == 3
    with pytest.raises(TimeoutError), anyio.fail_after(0.05):
        await model.complete("b")


async def test_function_script_with_fault_rule_and_latency() -> None:
    async def answer(request: LLMRequest) -> Reply:
        return Reply(text=f"re: {request.last_user_text}", latency=0.05)

    model = ScriptedModel(answer, faults=fail_first(1, Fault.server_error()))
    with pytest.raises(InjectedFaultError, match="Internal server error"):
        await model.complete("first")
    start = anyio.current_time()
    reply = await model.complete("second")
    assert reply.text == "re: second"
    assert anyio.current_time() - start >= 0.05
    model.set_script(["queued"])
    model.push("and another")
    assert model.remaining == 2
