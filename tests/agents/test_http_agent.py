"""`http_agent`: one JSON POST per message to the user's service, its answer mapped into the event stream."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from agent_helpers import of_type, opened
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from niceeval._core.errors import UsageError
from niceeval._core.events import ActionCalledEvent, MessageEvent, SubagentCalledEvent, UsageEvent
from niceeval._core.loopback import Uvicorn, bind_loopback, uvicorn_config
from niceeval.agents import AgentError, http_agent

pytestmark = pytest.mark.anyio


class Booking(BaseModel):
    booking_id: int


class Service:
    """A small agent service: answers by path, records what it received."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/agent", self.agent, methods=["POST"]),
                Route("/status/{code:int}", self.status, methods=["POST"]),
                Route("/not-json", self.not_json, methods=["POST"]),
                Route("/shape", self.shape, methods=["POST"]),
                Route("/bad-event", self.bad_event, methods=["POST"]),
                Route("/slow", self.slow, methods=["POST"]),
            ]
        )

    async def agent(self, request: Request) -> Response:
        body = await request.json()
        self.received.append(body)
        self.headers.append(dict(request.headers))
        answer: dict[str, Any] = {"reply": f"echo: {body['message']}"}
        if body["output_schema"] is not None:
            answer["data"] = {"booking_id": 42}
        if body["message"] == "book":
            answer["events"] = [
                {
                    "type": "action.called",
                    "id": "t1",
                    "name": "book_listing",
                    "input": {"listing_id": 1},
                    "output": {"ok": True},
                },
                {"type": "subagent.called", "name": "payments", "remote_url": "http://pay", "status": "success"},
            ]
            answer["usage"] = [
                {"model": "openai/gpt-5-mini", "input_tokens": 100, "output_tokens": 10, "cache_read_tokens": 50}
            ]
        if body["message"] == "ask":
            answer |= {"status": "waiting", "events": [{"type": "input.requested", "prompt": "Approve?"}]}
        return JSONResponse(answer)

    async def status(self, request: Request) -> Response:
        return PlainTextResponse("database is down", status_code=request.path_params["code"])

    async def not_json(self, request: Request) -> Response:
        return PlainTextResponse("<html>oops</html>", media_type="application/json")

    async def shape(self, request: Request) -> Response:
        return JSONResponse({"text": "hi"})

    async def bad_event(self, request: Request) -> Response:
        return JSONResponse({"reply": "ok", "events": [{"type": "action.called"}]})

    async def slow(self, request: Request) -> Response:
        await asyncio.sleep(0.5)
        return JSONResponse({"reply": "late"})


@pytest.fixture(scope="module")
def service() -> Iterator[tuple[Service, str]]:
    service = Service()
    sock = bind_loopback("127.0.0.1", 0)
    server = Uvicorn(uvicorn_config(service.app(), quiet=True), asyncio.Event())
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the test service did not start within 10 s"
        time.sleep(0.001)
    try:
        yield service, f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.request_stop()
        thread.join(5)
        sock.close()


async def test_round_trip_maps_the_answer_into_the_event_stream(service: tuple[Service, str]) -> None:
    server, url = service
    agent = http_agent(f"{url}/agent", headers={"Authorization": "Bearer t0k"})
    async with opened(agent, "eval#http") as (session, log):
        first = await session.send("hello")
        second = await session.send("book", output=Booking)

    assert first.text == "echo: hello" and first.status == "completed"
    assert second.data == Booking(booking_id=42)
    assert [e.type for e in log.events] == [
        "message",
        "message",
        "message",
        "action.called",
        "subagent.called",
        "usage",
        "message",
    ]
    action, subagent, usage = log.events[3:6]
    assert isinstance(action, ActionCalledEvent) and action.name == "book_listing" and action.input == {"listing_id": 1}
    assert isinstance(subagent, SubagentCalledEvent) and subagent.remote_url == "http://pay"
    assert isinstance(usage, UsageEvent) and (usage.input_tokens, usage.cache_read_tokens) == (100, 50)
    assert [e.seq for e in log.events] == list(range(7))
    body = server.received[-1]
    assert body["session_id"] == "eval#http" and body["message"] == "book"
    assert body["history"] == [
        {"role": "user", "text": "hello", "data": None},
        {"role": "assistant", "text": "echo: hello", "data": None},
    ]
    assert body["output_schema"]["properties"]["booking_id"]["type"] == "integer"
    assert server.headers[-1]["authorization"] == "Bearer t0k"
    reply = log.events[-1]
    assert isinstance(reply, MessageEvent) and reply.data == Booking(booking_id=42)


async def test_a_waiting_answer_parks_the_turn(service: tuple[Service, str]) -> None:
    _, url = service
    async with opened(http_agent(f"{url}/agent")) as (session, log):
        reply = await session.send("ask")
    assert reply.status == "waiting"
    assert [e.type for e in of_type(log, "input.requested")] == ["input.requested"]


async def test_history_survives_a_revived_session(service: tuple[Service, str]) -> None:
    server, url = service
    agent = http_agent(f"{url}/agent")
    async with opened(agent, "eval#revive") as (session, _):
        await session.send("one")
    async with opened(agent, "eval#revive") as (session, _):
        await session.send("two")
    assert [m["text"] for m in server.received[-1]["history"]] == ["one", "echo: one"]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/status/503", r"http agent http://127\.0\.0\.1:\d+/status/503 answered HTTP 503: database is down"),
        ("/not-json", r"/not-json answered with a body that is not JSON .*<html>oops</html>"),
        ("/shape", r"/shape answered with the wrong shape: reply: Field required; text: Extra inputs"),
        ("/bad-event", r"/bad-event: events\[0\] is not a valid event: action\.called\.name: Field required"),
    ],
)
async def test_unusable_answers_are_errors_naming_the_url(
    service: tuple[Service, str], path: str, message: str
) -> None:
    _, url = service
    async with opened(http_agent(f"{url}{path}")) as (session, _):
        with pytest.raises(AgentError, match=message):
            await session.send("hi")


async def test_a_service_that_does_not_answer_in_time(service: tuple[Service, str]) -> None:
    _, url = service
    async with opened(http_agent(f"{url}/slow", timeout=0.1)) as (session, _):
        with pytest.raises(AgentError, match=r"/slow: no answer within 0\.1s"):
            await session.send("hi")


async def test_a_service_that_is_not_running() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with opened(http_agent(f"http://127.0.0.1:{port}/agent")) as (session, _):
        with pytest.raises(AgentError, match=rf"http agent http://127\.0\.0\.1:{port}/agent: could not reach"):
            await session.send("hi")


def test_the_url_must_be_http() -> None:
    with pytest.raises(UsageError, match="needs an http:// or https:// URL"):
        http_agent("localhost:8000")
