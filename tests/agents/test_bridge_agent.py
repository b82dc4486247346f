"""`bridge_agent`: any agent's OpenAI calls routed through niceeval's local bridge and recorded on the way.

Real HTTP over loopback end to end: the agent is a hand-written loop over the real `openai` SDK, the bridge
forwards to `niceeval.testing`'s server as the upstream.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading
from typing import Any

import anyio
import httpx
import openai
import pytest
from agent_helpers import of_type, opened
from bridge_helpers import chat_loop, lookup, looping

from niceeval import EvalContext, define_eval
from niceeval._core.errors import UsageError
from niceeval._core.events import ActionCalledEvent, EventLog, UsageEvent
from niceeval._core.loopback import ServerThread, bind_loopback, uvicorn_config
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.agents import BridgeSession, bridge_agent
from niceeval.providers import shared_clients
from niceeval.testing import Fault, LLMRequest, LLMServer, Reply, TokenUsage, ToolCall, fail_first

pytestmark = pytest.mark.anyio
WIRE = {"chat": "chat.completions", "responses": "responses"}
WAYS = [("chat", False), ("chat", True), ("responses", False), ("responses", True)]


def lookup_then_answer(server: LLMServer) -> None:
    server.push(
        Reply(
            tool_calls=[ToolCall(name="lookup", arguments={"order_id": "42"})],
            usage=TokenUsage(input_tokens=100, output_tokens=10, cached_tokens=40),
        ),
        Reply(text="Order 42 has shipped.", usage=TokenUsage(input_tokens=150, output_tokens=8)),
    )


@pytest.mark.parametrize(("api", "stream"), WAYS, ids=[f"{a}{'-stream' if s else ''}" for a, s in WAYS])
async def test_usage_and_tool_calls_are_recorded(llm_server: LLMServer, api: str, stream: bool) -> None:
    lookup_then_answer(llm_server)
    async with opened(looping(llm_server.base_url, api, stream=stream)) as (session, log):
        reply = await session.send("Where is order 42?")
    assert reply.text == "Order 42 has shipped."
    assert [e.type for e in log.events] == ["message", "usage", "action.called", "usage", "message"]
    first, second = of_type(log, "usage")
    assert isinstance(first, UsageEvent) and isinstance(second, UsageEvent)
    assert (first.model, first.input_tokens, first.cache_read_tokens, first.output_tokens) == (
        "openai/gpt-5-mini",
        60,
        40,
        10,
    )
    assert (second.input_tokens, second.cache_read_tokens, second.output_tokens) == (150, 0, 8)
    (call,) = of_type(log, "action.called")
    assert isinstance(call, ActionCalledEvent)
    assert (call.id, call.name, call.input, call.status) == ("call_0001", "lookup", {"order_id": "42"}, "success")
    assert call.output == {"order_id": "42", "status": "shipped"}
    assert [r.api for r in llm_server.requests] == [WIRE[api]] * 2


async def test_a_streamed_chat_records_usage_without_showing_the_agent_a_usage_chunk(llm_server: LLMServer) -> None:
    llm_server.push("Hello there.")
    seen: list[Any] = []
    async with opened(looping(llm_server.base_url, stream=True, seen=seen)) as (session, log):
        await session.send("hi")
    (usage,) = of_type(log, "usage")
    assert isinstance(usage, UsageEvent) and usage.output_tokens > 0
    # The bridge asked the upstream for usage; the agent, which did not, gets the stream it asked for.
    assert llm_server.requests[0].body["stream_options"] == {"include_usage": True}
    assert seen and all(chunk.choices for chunk in seen)


async def test_an_error_shaped_tool_result_is_a_failed_call(llm_server: LLMServer) -> None:
    llm_server.push(ToolCall(name="lookup", arguments={"order_id": "7"}), "Sorry, the database is down.")
    agent = looping(llm_server.base_url, tool=lambda arguments: json.dumps({"error": "database down"}))
    async with opened(agent) as (session, log):
        await session.send("Where is order 7?")
    (call,) = of_type(log, "action.called")
    assert isinstance(call, ActionCalledEvent)
    assert (call.status, call.error, call.output) == ("failed", "database down", {"error": "database down"})


async def test_a_call_whose_result_never_goes_back_is_recorded_when_the_turn_ends(llm_server: LLMServer) -> None:
    llm_server.push(ToolCall(name="handoff", arguments={"team": "billing"}))

    async def stops_at_the_call(message: str, session: BridgeSession) -> str:
        async with openai.AsyncOpenAI(base_url=session.base_url, api_key=session.api_key) as client:
            await client.chat.completions.create(model="gpt-5-mini", messages=[{"role": "user", "content": message}])
        return "Passed on to billing."

    async with opened(bridge_agent(stops_at_the_call, upstream=llm_server.base_url)) as (session, log):
        await session.send("I was charged twice")
    assert [e.type for e in log.events] == ["message", "usage", "action.called", "message"]
    (call,) = of_type(log, "action.called")
    assert isinstance(call, ActionCalledEvent)
    assert (call.name, call.input, call.status, call.output) == ("handoff", {"team": "billing"}, "success", None)


async def test_a_large_tool_result_is_recorded_cut_with_a_note(llm_server: LLMServer) -> None:
    llm_server.push(ToolCall(name="lookup", arguments={"order_id": "1"}), "Done.")
    async with opened(looping(llm_server.base_url, tool=lambda arguments: "x" * 50_000)) as (session, log):
        await session.send("Read the log")
    (call,) = of_type(log, "action.called")
    assert isinstance(call, ActionCalledEvent) and isinstance(call.output, str)
    assert call.output.endswith("[niceeval: truncated, kept 32,000 of 50,000 characters]")
    assert len(call.output) < 32_100
    assert len(llm_server.requests[1].messages[-1].content) == 50_000  # the model still got all of it


async def test_concurrent_sessions_keep_their_own_records_on_one_bridge(llm_server: LLMServer) -> None:
    def by_order(request: LLMRequest) -> Reply:
        last = request.messages[-1]
        if last.role == "tool":
            return Reply(text=f"Found: {last.content}")
        return Reply(tool_calls=[ToolCall(name="lookup", arguments={"order_id": request.last_user_text[-2:]})])

    llm_server.set_script(by_order)
    llm_server.latency = 0.02  # the two conversations interleave at the upstream
    agent = looping(llm_server.base_url)
    logs = {"11": EventLog(), "22": EventLog()}
    urls: dict[str, str] = {}

    async def converse(order: str) -> None:
        session = await agent.open(f"eval#{order}", logs[order])
        assert isinstance(session, BridgeSession)
        urls[order] = session.base_url
        try:
            await session.send(f"Where is order {order}")
        finally:
            await session.close()

    async with shared_clients():
        async with anyio.create_task_group() as group:
            group.start_soon(converse, "11")
            group.start_soon(converse, "22")
        async with httpx.AsyncClient() as plain:  # a closed session's URL is gone, the server still runs
            assert (await plain.get(urls["11"] + "/models")).status_code == 404
    with pytest.raises(httpx.ConnectError):  # ... until the scope (the suite) ends
        httpx.get(urls["11"] + "/models")
    for order, log in logs.items():
        (call,) = of_type(log, "action.called")
        assert isinstance(call, ActionCalledEvent)
        assert (call.input, call.output) == ({"order_id": order}, {"order_id": order, "status": "shipped"})
        assert len(of_type(log, "usage")) == 2
    one, two = urls["11"], urls["22"]
    assert one != two and one.split("/s/")[0] == two.split("/s/")[0]  # one server, a URL per session


async def test_an_upstream_429_reaches_the_agent_with_retry_after_intact(llm_server: LLMServer) -> None:
    llm_server.faults = fail_first(1, Fault.rate_limit(retry_after=7))
    llm_server.push("Hi.")
    caught: list[openai.RateLimitError] = []

    async def agent(message: str, session: BridgeSession) -> str:
        async with openai.AsyncOpenAI(base_url=session.base_url, api_key=session.api_key, max_retries=0) as client:
            messages: Any = [{"role": "user", "content": message}]
            try:
                await client.chat.completions.create(model="gpt-5-mini", messages=messages)
            except openai.RateLimitError as exc:
                caught.append(exc)
            retried = await client.chat.completions.create(model="gpt-5-mini", messages=messages)
            return retried.choices[0].message.content or ""

    async with opened(bridge_agent(agent, upstream=llm_server.base_url)) as (session, log):
        assert (await session.send("hello")).text == "Hi."
    (error,) = caught
    assert error.response.headers["retry-after"] == "7"
    assert error.message.endswith("Rate limit reached (injected).")
    assert [e.type for e in log.events] == ["message", "usage", "message"]  # the 429 spent nothing


async def test_the_agents_own_key_is_forwarded_and_never_recorded(llm_server: LLMServer) -> None:
    llm_server.push(ToolCall(name="lookup", arguments={"order_id": "1"}), "Done.")

    async def agent(message: str, session: BridgeSession) -> str:
        async with openai.AsyncOpenAI(base_url=session.base_url, api_key="sk-agents-own-key-1234") as client:
            return await chat_loop(client, message, stream=False, tool=lookup, seen=[])

    async with opened(bridge_agent(agent, upstream=llm_server.base_url)) as (session, log):
        await session.send("Where is order 1?")
    assert [r.headers["authorization"] for r in llm_server.requests] == ["Bearer sk-agents-own-key-1234"] * 2
    recorded = json.dumps([e.model_dump(mode="json") for e in log.events])
    assert "sk-agents-own-key" not in recorded and "authorization" not in recorded.lower()


async def test_the_configured_key_replaces_the_agents(llm_server: LLMServer) -> None:
    llm_server.push("Hi.")
    agent = bridge_agent(upstream=llm_server.base_url, api_key="sk-configured-5678")(_say_hi)
    async with opened(agent) as (session, _):
        await session.send("hello")
    assert llm_server.requests[0].headers["authorization"] == "Bearer sk-configured-5678"


async def test_the_placeholder_key_becomes_openai_api_key(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    llm_server.push("Hi.")
    async with opened(bridge_agent(_say_hi, upstream=llm_server.base_url)) as (session, _):
        await session.send("hello")
    assert llm_server.requests[0].headers["authorization"] == "Bearer sk-from-the-environment"


async def _say_hi(message: str, session: BridgeSession) -> str:
    async with openai.AsyncOpenAI(base_url=session.base_url, api_key=session.api_key) as client:
        answer = await client.chat.completions.create(
            model="gpt-5-mini", messages=[{"role": "user", "content": message}]
        )
    return answer.choices[0].message.content or ""


async def test_an_unknown_session_token_is_404(llm_server: LLMServer) -> None:
    async with opened(bridge_agent(_say_hi, upstream=llm_server.base_url)) as (session, _):
        assert isinstance(session, BridgeSession)
        root = session.base_url.split("/s/")[0]
        async with httpx.AsyncClient() as plain:
            unknown = await plain.post(f"{root}/s/not-a-session/v1/chat/completions", json={"model": "gpt-5-mini"})
            elsewhere = await plain.get(f"{root}/v1/models")
    assert unknown.status_code == elsewhere.status_code == 404
    assert "no session at this URL" in unknown.json()["error"]["message"]
    assert llm_server.requests == []


async def test_other_paths_pass_through_unrecorded(llm_server: LLMServer) -> None:
    async def lists_models(message: str, session: BridgeSession) -> str:
        async with openai.AsyncOpenAI(base_url=session.base_url, api_key=session.api_key) as client:
            return ", ".join([model.id async for model in client.models.list()])

    async with opened(bridge_agent(lists_models, upstream=llm_server.base_url)) as (session, log):
        assert (await session.send("models?")).text == "scripted"
    assert [e.type for e in log.events] == ["message", "message"]


async def test_an_unreachable_upstream_is_a_502_for_the_agent() -> None:
    caught: list[openai.APIStatusError] = []

    async def agent(message: str, session: BridgeSession) -> str:
        async with openai.AsyncOpenAI(base_url=session.base_url, api_key=session.api_key, max_retries=0) as client:
            try:
                await client.chat.completions.create(model="gpt-5-mini", messages=[{"role": "user", "content": "x"}])
            except openai.APIStatusError as exc:
                caught.append(exc)
        return "no model today"

    async with opened(bridge_agent(agent, upstream="http://127.0.0.1:9/v1")) as (session, log):
        await session.send("hello")
    (error,) = caught
    assert error.status_code == 502 and "could not reach the upstream http://127.0.0.1:9/v1" in error.message
    assert [e.type for e in log.events] == ["message", "message"]


async def test_a_blocking_client_in_async_code_does_not_deadlock_the_bridge(llm_server: LLMServer) -> None:
    llm_server.push("Still answered.")

    async def blocks_the_loop(message: str, session: BridgeSession) -> str:
        with openai.OpenAI(base_url=session.base_url, api_key=session.api_key, timeout=5) as client:
            answer = client.chat.completions.create(model="gpt-5-mini", messages=[{"role": "user", "content": message}])
        return answer.choices[0].message.content or ""

    async with opened(bridge_agent(blocks_the_loop, upstream=llm_server.base_url)) as (session, log):
        assert (await session.send("hello")).text == "Still answered."
    assert [e.type for e in log.events] == ["message", "usage", "message"]


async def test_a_subprocess_agent_is_recorded_through_the_session_env(llm_server: LLMServer) -> None:
    llm_server.push(Reply(text="From the subprocess.", usage=TokenUsage(input_tokens=30, output_tokens=4)))
    program = textwrap.dedent(
        """
        import sys
        from openai import OpenAI  # reads OPENAI_BASE_URL and OPENAI_API_KEY

        answer = OpenAI().chat.completions.create(
            model="gpt-5-mini", messages=[{"role": "user", "content": sys.argv[1]}]
        )
        print(answer.choices[0].message.content)
        """
    )

    def run_program(message: str, session: BridgeSession) -> str:
        env = {"PATH": "/usr/bin:/bin", **session.env}
        done = subprocess.run(
            [sys.executable, "-c", program, message], env=env, capture_output=True, text=True, check=True, timeout=60
        )
        return done.stdout.strip()

    async with opened(bridge_agent(run_program, upstream=llm_server.base_url)) as (session, log):
        assert (await session.send("hello")).text == "From the subprocess."
    (usage,) = of_type(log, "usage")
    assert isinstance(usage, UsageEvent) and (usage.model, usage.input_tokens, usage.output_tokens) == (
        "openai/gpt-5-mini",
        30,
        4,
    )
    assert "authorization" not in llm_server.requests[0].headers  # no OPENAI_API_KEY here: the placeholder is dropped


def test_max_cost_prices_the_bridged_usage(llm_server: LLMServer) -> None:
    usage = TokenUsage(input_tokens=400_000, output_tokens=100_000)
    llm_server.push(Reply(text="One.", usage=usage), Reply(text="Two.", usage=usage))

    async def ev(t: EvalContext) -> None:
        await t.send("hello")
        t.max_cost(1.0)  # gpt-5-mini: 400k in at $0.25/M + 100k out at $2/M = $0.30
        t.max_cost(0.15).label("tight budget")

    spec = define_eval(ev)
    options = ExecOptions(timeout=30, agent=bridge_agent(_say_hi, upstream=llm_server.base_url))
    result = anyio.run(execute, EvalEntry(id=f"x.py::{spec.name}", spec=spec), 0, options)
    assert result.agent_spend.cost == pytest.approx(0.30)
    loose, tight = result.assertions
    assert loose.state == "passed"
    assert (tight.name, tight.state, tight.score) == ("tight budget", "failed", pytest.approx(0.5))


def test_an_agent_function_without_the_session_is_refused() -> None:
    with pytest.raises(UsageError, match=r"must take \(message, session\)"):
        bridge_agent(lambda message: message)


async def test_an_upstream_that_does_not_answer_in_time_is_a_504_for_the_agent(llm_server: LLMServer) -> None:
    llm_server.faults = lambda request: Fault.hang()
    caught: list[openai.APIStatusError] = []

    async def agent(message: str, session: BridgeSession) -> str:
        async with openai.AsyncOpenAI(base_url=session.base_url, api_key=session.api_key, max_retries=0) as client:
            try:
                await client.chat.completions.create(model="gpt-5-mini", messages=[{"role": "user", "content": "x"}])
            except openai.APIStatusError as exc:
                caught.append(exc)
        return "gave up"

    async with opened(bridge_agent(agent, upstream=llm_server.base_url, timeout=0.2)) as (session, log):
        await session.send("hello")
    (error,) = caught
    assert error.status_code == 504 and "did not answer within 0.2s" in error.message
    assert [e.type for e in log.events] == ["message", "message"]


async def test_closing_a_session_ends_its_requests_in_flight(llm_server: LLMServer) -> None:
    llm_server.faults = lambda request: Fault.hang()
    statuses: list[int] = []
    agent = bridge_agent(_say_hi, upstream=llm_server.base_url)
    async with shared_clients():  # the bridge outlives the session, as in a suite
        session = await agent.open("eval#1", EventLog())
        assert isinstance(session, BridgeSession)

        async def waits() -> None:
            async with httpx.AsyncClient(timeout=10) as plain:
                request = {"model": "gpt-5-mini", "messages": [{"role": "user", "content": "hi"}]}
                answer = await plain.post(f"{session.base_url}/chat/completions", json=request)
                statuses.append(answer.status_code)

        with anyio.fail_after(5):
            async with anyio.create_task_group() as group:
                group.start_soon(waits)
                while not llm_server.requests:  # the request waits at the upstream
                    await anyio.sleep(0.005)
                await session.close()
    assert statuses == [502]


def test_the_configured_key_is_kept_out_of_reports() -> None:
    from niceeval._run.suite import agent_secrets

    assert agent_secrets(bridge_agent(_say_hi, api_key="sk-configured-5678")) == ["sk-configured-5678"]


async def test_a_stream_reaches_the_agent_event_by_event() -> None:
    seen_first = threading.Event()
    waited: list[bool] = []

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        body = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "gpt-5-mini", **extra}
        body.setdefault("choices", [{"index": 0, "delta": delta, "finish_reason": finish}])
        return f"data: {json.dumps(body)}\n\n".encode()

    async def upstream(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send(
            {"type": "http.response.body", "body": chunk({"role": "assistant", "content": "Hel"}), "more_body": True}
        )
        waited.append(await anyio.to_thread.run_sync(seen_first.wait, 5))  # the rest only once the agent has this
        usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
        for piece in [chunk({"content": "lo"}, "stop"), chunk({}, choices=[], usage=usage), b"data: [DONE]\n\n"]:
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def agent(message: str, session: BridgeSession) -> str:
        text = ""
        async with openai.AsyncOpenAI(base_url=session.base_url, api_key=session.api_key) as client:
            messages: Any = [{"role": "user", "content": message}]
            async for piece in await client.chat.completions.create(model="gpt-5-mini", messages=messages, stream=True):
                text += "".join(choice.delta.content or "" for choice in piece.choices)
                seen_first.set()
        return text

    sock = bind_loopback("127.0.0.1", 0)
    server = ServerThread(uvicorn_config(upstream, quiet=True), sock, asyncio.Event(), name="a streaming upstream")
    server.start()
    try:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        async with opened(bridge_agent(agent, upstream=url)) as (session, log):
            assert (await session.send("hi")).text == "Hello"
    finally:
        server.stop()
    assert waited == [True]
    (usage,) = of_type(log, "usage")
    assert isinstance(usage, UsageEvent) and (usage.input_tokens, usage.output_tokens) == (5, 2)
