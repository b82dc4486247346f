"""Scripts (queues and functions), the server's lifecycle, and the errors that teach how to use it."""

from __future__ import annotations

import socket
import threading

import anyio
import httpx
import openai
import pytest
from pydantic import ValidationError

import niceeval.testing
from niceeval import UsageError
from niceeval.testing import Fault, LLMRequest, LLMServer, Reply, TokenUsage, ToolCall, serve


def ask(server: LLMServer, content: str = "hi", *, max_retries: int = 0) -> str | None:
    with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=max_retries) as c:
        completion = c.chat.completions.create(model="m", messages=[{"role": "user", "content": content}])
    return completion.choices[0].message.content


def test_queue_is_served_in_order_then_runs_out_with_a_clear_error(llm_server: LLMServer) -> None:
    llm_server.push("one", "two")
    assert llm_server.remaining == 2
    assert [ask(llm_server), ask(llm_server)] == ["one", "two"]
    with pytest.raises(openai.InternalServerError, match="ran out of replies") as error:
        ask(llm_server, "third question", max_retries=2)
    assert "all 2 scripted replies were used" in error.value.message
    assert "'third question'" in error.value.message
    assert len(llm_server.requests) == 3, "running out must not be retried"


def test_function_script_answers_any_number_of_requests(llm_server: LLMServer) -> None:
    def judge(request: LLMRequest) -> Reply | str:
        if "capital" in request.last_user_text:
            return Reply(tool_calls=[ToolCall(name="lookup", arguments={"q": request.last_user_text})])
        return request.last_user_text.upper()

    llm_server.set_script(judge)
    assert llm_server.remaining is None
    assert ask(llm_server, "shout") == "SHOUT"
    assert ask(llm_server, "again") == "AGAIN"
    with openai.OpenAI(base_url=llm_server.base_url, api_key="k", max_retries=0) as c:
        completion = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "capital?"}])
    calls = completion.choices[0].message.tool_calls
    assert calls is not None and calls[0].function.arguments == '{"q": "capital?"}'
    with pytest.raises(UsageError, match="function"):
        llm_server.push("no queue to push to")


def test_async_function_script_can_return_faults() -> None:
    calls = 0

    async def flaky(request: LLMRequest) -> Fault | str:
        nonlocal calls
        calls += 1
        await anyio.sleep(0)
        return Fault.rate_limit() if calls == 1 else f"answer {calls}"

    with LLMServer(flaky) as server:
        assert ask(server, max_retries=1) == "answer 2"


def test_script_function_errors_are_reported_not_retried(llm_server: LLMServer) -> None:
    def broken(request: LLMRequest) -> str:
        raise KeyError("no such case")

    llm_server.set_script(broken)
    with pytest.raises(openai.InternalServerError, match="raised KeyError"):
        ask(llm_server, max_retries=2)
    assert len(llm_server.requests) == 1


def test_set_script_replaces_the_queue(llm_server: LLMServer) -> None:
    llm_server.push("old")
    llm_server.set_script(["new"])
    assert ask(llm_server) == "new"
    assert llm_server.remaining == 0


def test_fault_in_the_queue_uses_up_its_place() -> None:
    with LLMServer([Fault.rate_limit(), "after"]) as server:
        assert ask(server, max_retries=1) == "after"
        assert server.remaining == 0


@pytest.mark.parametrize(
    ("script", "message"),
    [("hello", "wrap a single reply in a list"), ([1], "script item 0"), ({"a": 1}, "list of replies")],
)
def test_bad_scripts_are_refused(script: object, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        LLMServer(script)  # type: ignore[arg-type]


def test_reply_validation() -> None:
    with pytest.raises(ValidationError, match="either text or data"):
        Reply(text="a", data={"b": 1})
    with pytest.raises(ValidationError, match="carries no text"):
        Reply(text="a", fault=Fault.hang())
    with pytest.raises(ValidationError, match="cannot exceed input_tokens"):
        TokenUsage(input_tokens=1, output_tokens=1, cached_tokens=2)
    with pytest.raises(ValueError, match="5xx"):
        Fault.server_error(404)


@pytest.mark.parametrize("host", ["0.0.0.0", "localhost", "192.168.1.10", "::"])
def test_only_loopback_addresses_are_allowed(host: str) -> None:
    with pytest.raises(UsageError, match="127.0.0.1 or ::1"):
        LLMServer(host=host)
    with pytest.raises(UsageError, match="127.0.0.1 or ::1"):
        serve(host=host)


def test_ipv6_loopback() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        server = LLMServer(["six"], host="::1").start()
    except OSError as exc:
        pytest.skip(f"cannot bind ::1: {exc}")
    try:
        assert server.base_url == f"http://[::1]:{server.port}/v1"
        assert ask(server) == "six"
    finally:
        server.stop()


def test_clean_shutdown_and_lifecycle_errors() -> None:
    threads_before = set(threading.enumerate())
    server = LLMServer(["x"])
    with pytest.raises(UsageError, match="no port until it starts"):
        _ = server.base_url
    with server:
        port = server.port
        assert server.anthropic_base_url == f"http://127.0.0.1:{port}"
        assert ask(server) == "x"
        with pytest.raises(UsageError, match="already started"):
            server.start()
    assert set(threading.enumerate()) == threads_before
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass
    server.stop()


def test_a_taken_port_is_an_os_error() -> None:
    with LLMServer() as first, pytest.raises(OSError):
        LLMServer(port=first.port).start()


def test_bodies_that_are_not_requests_get_provider_shaped_400s(llm_server: LLMServer) -> None:
    with httpx.Client(base_url=llm_server.url) as http:
        not_json = http.post("/v1/chat/completions", content=b"{oops")
        no_messages = http.post("/v1/messages", json={"model": "m", "max_tokens": 5})
        bad_arguments = http.post(
            "/v1/chat/completions",
            json={
                "model": "m",
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{"}}
                        ],
                    }
                ],
            },
        )
        unknown = http.get("/v2/whatever")
    assert not_json.status_code == 400
    assert not_json.json()["error"]["type"] == "invalid_request_error"
    assert "not valid JSON" in not_json.json()["error"]["message"]
    assert no_messages.status_code == 400
    assert no_messages.json()["type"] == "error"
    assert "messages" in no_messages.json()["error"]["message"]
    assert bad_arguments.status_code == 400
    assert "arguments" in bad_arguments.json()["error"]["message"]
    assert unknown.status_code == 404
    assert "/v1/chat/completions" in unknown.json()["error"]["message"]
    assert llm_server.requests == []


def test_request_view_helpers() -> None:
    request = LLMRequest.from_prompt("Capital?", system="Be brief.")
    assert (request.system, request.last_user_text, request.provider) == ("Be brief.", "Capital?", "scripted")
    assert request.output_schema is None


def test_an_empty_script_says_so(llm_server: LLMServer) -> None:
    with pytest.raises(openai.InternalServerError, match="it holds no replies"):
        ask(llm_server)


def test_public_names() -> None:
    assert sorted(niceeval.testing.__all__) == sorted(
        [
            "Fault",
            "FaultRule",
            "InjectedFaultError",
            "LLMRequest",
            "LLMServer",
            "Message",
            "Reply",
            "ReplyLike",
            "Script",
            "ScriptExhaustedError",
            "ScriptedModel",
            "TokenUsage",
            "Tool",
            "ToolCall",
            "echo",
            "estimate_tokens",
            "fail_first",
            "serve",
        ]
    )
    assert all(hasattr(niceeval.testing, name) for name in niceeval.testing.__all__)
