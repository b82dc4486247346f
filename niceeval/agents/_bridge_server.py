"""The recording bridge's local server: one per suite, one route per agent session, relaying to the upstream.

`http://127.0.0.1:PORT/s/<token>/v1/...` is session `<token>`'s base URL: each request is forwarded to the
upstream's `.../v1/...` and the answer relayed back as it came (status, headers, body; streams event by event).
Chat Completions and Responses calls are read on the way (`_bridge_wire`) and what they say is handed to the
session's recorder on the session's own event loop. The server runs uvicorn on its own thread and loop, so an
agent that blocks niceeval's loop (a sync client in `async def`) cannot deadlock it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import httpx

from niceeval._core.errors import UsageError
from niceeval._core.loopback import ServerThread, bind_loopback, root_url, uvicorn_config
from niceeval.agents._bridge_wire import (
    ENDPOINTS,
    PLACEHOLDER_KEY,
    Answer,
    Api,
    StreamReader,
    ToolResult,
    answer_of,
    parse_json,
    request_model,
    split_events,
    tool_results,
)

_PATH = re.compile(r"^/s/([A-Za-z0-9_-]+)/v1(?:/(.*))?$")
_HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}
_NOT_FORWARDED = _HOP_BY_HOP | {"host", "content-length", "accept-encoding", "authorization"}
_NOT_RELAYED = _HOP_BY_HOP | {"content-length", "content-encoding"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Upstream:
    """Where a session's requests go, and with which key."""

    url: str
    """The upstream's base URL, ending in its `/v1` (the bridge appends what follows `/v1` in the request)."""
    api_key: str | None = None
    """Sent instead of whatever the agent sent (`bridge_agent(api_key=...)`)."""
    default_key: str | None = None
    """Sent when the agent sent no key or the session's placeholder (`OPENAI_API_KEY` when the session opened)."""
    timeout: float = 600.0


class Recorder(Protocol):
    """What a route reports to; called on the session's event loop."""

    def requested(self, results: list[ToolResult]) -> None:
        """A request to the model went out carrying these tool results."""
        ...

    def answered(self, requested_model: str, answer: Answer) -> None:
        """The model answered a request that named `requested_model`."""
        ...


@dataclass(eq=False, slots=True)
class Route:
    """One session's way through the bridge."""

    token: str
    upstream: Upstream
    recorder: Recorder
    loop: asyncio.AbstractEventLoop
    """The session's event loop: the recorder is called there, never on the bridge's thread."""
    requests: set[anyio.CancelScope] = field(default_factory=set)
    """Requests in flight (touched on the bridge's thread only)."""

    def report(self, call: Callable[..., None], *args: Any) -> None:
        """Run `call(*args)` on the session's loop, in the order reported (it may have closed: then nothing)."""
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(call, *args)

    def cancel_requests(self) -> None:
        """End the requests in flight (the session closed)."""
        for scope in list(self.requests):
            scope.cancel()


class Bridge:
    """The local server: started on first `open_route`, closed with `close()` (or by the suite's client scope)."""

    def __init__(self) -> None:
        self._routes: dict[str, Route] = {}
        self._lock = threading.Lock()
        self._server: ServerThread | None = None
        self.url = ""
        """`http://127.0.0.1:PORT` once started."""
        self._client: httpx.AsyncClient | None = None

    def open_route(self, upstream: Upstream, recorder: Recorder) -> Route:
        """A new route (and URL) for one session, recording into `recorder` on the calling event loop.

        Raises:
            UsageError: The upstream is this bridge (the URL of a session was made the upstream).
            RuntimeError: The server did not start.
        """
        self._start()
        if upstream.url.startswith(self.url + "/"):
            raise UsageError(
                f"bridge_agent: the upstream {upstream.url} is the bridge itself; was OPENAI_BASE_URL set from a "
                "session's env in this process? Give session.env to the agent's subprocess only, or pass upstream="
            )
        route = Route(secrets.token_urlsafe(16), upstream, recorder, asyncio.get_running_loop())
        with self._lock:
            self._routes[route.token] = route
        return route

    def base_url(self, route: Route) -> str:
        """The route's OpenAI base URL, `http://127.0.0.1:PORT/s/<token>/v1`."""
        return f"{self.url}/s/{route.token}/v1"

    def close_route(self, route: Route) -> None:
        """Forget the route (its URL answers 404 from now on) and end its requests in flight."""
        with self._lock:
            self._routes.pop(route.token, None)
        loop = self._server.server.loop if self._server is not None else None
        if loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(route.cancel_requests)

    async def close(self) -> None:
        """Stop the server (it takes milliseconds; safe to call twice)."""
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.stop()

    def _start(self) -> None:
        with self._lock:
            if self._server is not None:
                return
            sock = bind_loopback("127.0.0.1", 0)
            port = sock.getsockname()[1]
            server = ServerThread(
                uvicorn_config(self, quiet=True, proxy=True),
                sock,
                asyncio.Event(),
                name=f"the niceeval bridge on port {port}",
            )
            server.start()
            self._server, self.url = server, root_url("127.0.0.1", port)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """The ASGI application."""
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        out = _Relay(send)
        found = _PATH.match(scope.get("raw_path", scope["path"].encode()).decode("latin-1"))
        with self._lock:
            route = self._routes.get(found.group(1)) if found else None
        if route is None or found is None:
            await out.fail(404, "niceeval bridge: no session at this URL (it ended, or the URL is wrong)")
            return
        with anyio.CancelScope() as cancel:
            route.requests.add(cancel)
            try:
                await self._forward(route, found.group(2) or "", scope, receive, out)
            finally:
                route.requests.discard(cancel)
        await out.fail(502, "niceeval bridge: the session ended during this request")

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                limits = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
                self._client = httpx.AsyncClient(limits=limits, follow_redirects=False)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._client is not None:
                    await self._client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _forward(self, route: Route, path: str, scope: dict[str, Any], receive: Any, out: _Relay) -> None:
        body = await _body(receive)
        api = ENDPOINTS.get(path) if scope["method"] == "POST" else None
        request = parse_json(body) if api is not None else None
        hide_usage = False
        if api is not None and isinstance(request, dict):
            route.report(route.recorder.requested, tool_results(api, request))
            if api == "chat" and request.get("stream") is True and not _asks_usage(request):
                request["stream_options"] = {**_dict(request.get("stream_options")), "include_usage": True}
                body, hide_usage = json.dumps(request).encode(), True
        query = scope.get("query_string", b"").decode("latin-1")
        url = route.upstream.url.rstrip("/") + (f"/{path}" if path else "") + (f"?{query}" if query else "")
        assert self._client is not None  # set by the lifespan before the first request
        outgoing = self._client.build_request(
            scope["method"],
            url,
            headers=_forwarded(scope, route.upstream),
            content=body,
            timeout=route.upstream.timeout,
        )
        try:
            response = await self._client.send(outgoing, stream=True)
        except httpx.TimeoutException:
            await out.fail(504, f"niceeval bridge: the upstream did not answer within {route.upstream.timeout:g}s")
            return
        except httpx.HTTPError as exc:
            await out.fail(502, f"niceeval bridge: could not reach the upstream {route.upstream.url}: {exc}")
            return
        try:
            await _relay(route, api if 200 <= response.status_code < 300 else None, request, response, out, hide_usage)
        except httpx.HTTPError as exc:
            await out.fail(502, f"niceeval bridge: the upstream's answer broke off: {exc}")
        finally:
            await response.aclose()


async def _relay(
    route: Route, api: Api | None, request: object, response: httpx.Response, out: _Relay, hide_usage: bool
) -> None:
    """Pass the upstream's answer on; a model answer is read on the way and reported before the agent has all of
    it, so the record is complete by the time the agent acts on the answer."""
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _NOT_RELAYED]
    model = request_model(request)
    if api is None:
        await out.start(response.status_code, headers)
        async for chunk in response.aiter_bytes():
            await out.chunk(chunk)
        await out.end()
        return
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        await _relay_stream(route, api, model, response, out, hide_usage, headers)
        return
    body = await response.aread()
    route.report(route.recorder.answered, model, answer_of(api, parse_json(body)))
    await out.start(response.status_code, headers)
    await out.end(body)


async def _relay_stream(
    route: Route,
    api: Api,
    model: str,
    response: httpx.Response,
    out: _Relay,
    hide_usage: bool,
    headers: list[tuple[str, str]],
) -> None:
    reader = StreamReader(api, hide_usage=hide_usage)
    buffer = bytearray()
    reported = False
    await out.start(response.status_code, headers)
    try:
        async for chunk in response.aiter_bytes():
            buffer += chunk
            for event in split_events(buffer):
                keep = reader.feed(event)
                if reader.finished and not reported:
                    route.report(route.recorder.answered, model, reader.result())
                    reported = True
                if keep:
                    await out.chunk(event)
        for event in split_events(buffer, final=True):
            await out.chunk(event)
    finally:
        if not reported:  # the stream broke off: what it said so far still happened
            route.report(route.recorder.answered, model, reader.result())
    await out.end()


def _asks_usage(request: dict[str, Any]) -> bool:
    return _dict(request.get("stream_options")).get("include_usage") is True


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _forwarded(scope: dict[str, Any], upstream: Upstream) -> list[tuple[str, str]]:
    """The agent's headers as the upstream gets them: hop-by-hop ones dropped, the key put in place."""
    raw: list[tuple[bytes, bytes]] = scope.get("headers", [])
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in raw]
    given = next((v for k, v in headers if k.lower() == "authorization"), None)
    kept = [(k, v) for k, v in headers if k.lower() not in _NOT_FORWARDED]
    if upstream.api_key:
        given = f"Bearer {upstream.api_key}"
    elif given is None or given.strip() == f"Bearer {PLACEHOLDER_KEY}":
        given = f"Bearer {upstream.default_key}" if upstream.default_key else None
    return kept + ([("authorization", given)] if given else [])


async def _body(receive: Any) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


class _Relay:
    """The answer to the agent, sent as it comes. Always completed, so uvicorn never logs a broken response."""

    def __init__(self, send: Any) -> None:
        self._send = send
        self.started = False
        self.done = False

    async def start(self, status: int, headers: list[tuple[str, str]]) -> None:
        encoded = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
        await self._send({"type": "http.response.start", "status": status, "headers": encoded})
        self.started = True

    async def chunk(self, data: bytes) -> None:
        if data:
            await self._send({"type": "http.response.body", "body": data, "more_body": True})

    async def end(self, data: bytes = b"") -> None:
        self.done = True
        await self._send({"type": "http.response.body", "body": data, "more_body": False})

    async def fail(self, status: int, message: str) -> None:
        """An error in OpenAI's shape if nothing was sent yet; else the answer ends where it is."""
        if self.done:
            return
        if not self.started:
            body = json.dumps({"error": {"message": message, "type": "niceeval_bridge", "param": None, "code": None}})
            await self.start(status, [("content-type", "application/json")])
            await self.end(body.encode())
            return
        await self.end()
