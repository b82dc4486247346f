"""The ASGI app: routes each provider's endpoint through the script, with latency and injected faults."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from niceeval.testing import _anthropic, _openai, _responses, _streams
from niceeval.testing._embeddings import embeddings_body
from niceeval.testing._replies import Fault, Reply
from niceeval.testing._request import LLMRequest, RequestShapeError
from niceeval.testing._script import ScriptExhaustedError, ScriptRunner, count_input_tokens

log = logging.getLogger("niceeval.testing")
_SSE = "text/event-stream"

ENDPOINTS = (
    "POST /v1/chat/completions and POST /v1/responses (OpenAI), POST /v1/messages and "
    "POST /v1/messages/count_tokens (Anthropic), GET /v1/models, POST /v1/embeddings (deterministic vectors); "
    "each completion also streams (stream: true)"
)


@dataclass(frozen=True)
class _Dialect:
    parse: Callable[[dict[str, Any], dict[str, str]], LLMRequest]
    render: Callable[[Reply, LLMRequest, str], dict[str, Any]]
    stream: Callable[[Reply, LLMRequest, str], list[str]]
    error: Callable[[int, str, str], dict[str, Any]]
    call_prefix: str
    response_prefix: str
    request_id_header: str


def _openai_error(status: int, message: str, _request_id: str) -> dict[str, Any]:
    # Both OpenAI APIs answer errors in one shape, which names no request id (the header carries it).
    return _openai.error_body(status, message)


_OPENAI = _Dialect(
    parse=_openai.parse_request,
    render=_openai.render,
    stream=_streams.chat_completions,
    error=_openai_error,
    call_prefix=_openai.CALL_PREFIX,
    response_prefix=_openai.RESPONSE_PREFIX,
    request_id_header="x-request-id",
)
_RESPONSES = _Dialect(
    parse=_responses.parse_request,
    render=_responses.render,
    stream=_streams.responses,
    error=_openai_error,
    call_prefix=_responses.CALL_PREFIX,
    response_prefix=_responses.RESPONSE_PREFIX,
    request_id_header="x-request-id",
)
_ANTHROPIC = _Dialect(
    parse=_anthropic.parse_request,
    render=_anthropic.render,
    stream=_streams.messages,
    error=_anthropic.error_body,
    call_prefix=_anthropic.CALL_PREFIX,
    response_prefix=_anthropic.RESPONSE_PREFIX,
    request_id_header="request-id",
)


class _TruncatedResponse(Response):
    """Announces the whole body in `Content-Length`, sends half of it, and returns without finishing.

    uvicorn then drops the connection (logging that the response was incomplete), so the client sees a body
    cut short mid-transfer.
    """

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        half = self.body[: len(self.body) // 2]
        await send({"type": "http.response.body", "body": half, "more_body": True})


class LLMApp:
    """The endpoints of one server, sharing its script runner and its stop signal.

    Args:
        runner: Picks replies and records requests.
        models: The model ids `GET /v1/models` lists.
        stopping: Set when the server stops; releases hanging requests and long latencies.
    """

    def __init__(self, runner: ScriptRunner, models: Sequence[str], stopping: asyncio.Event) -> None:
        self.runner = runner
        self.models = tuple(models)
        self.stopping = stopping

    def asgi(self) -> Starlette:
        """The Starlette application serving the endpoints."""
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat_completions, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
            ],
            exception_handlers={HTTPException: self._http_error},
        )

    async def _chat_completions(self, http: Request) -> Response:
        return await self._complete(_OPENAI, http)

    async def _responses(self, http: Request) -> Response:
        return await self._complete(_RESPONSES, http)

    async def _messages(self, http: Request) -> Response:
        return await self._complete(_ANTHROPIC, http)

    async def _count_tokens(self, http: Request) -> Response:
        # Claude Code counts its context before compacting it; the count is the script's token estimate.
        # The request is parsed (a malformed one is a 400) but not recorded: it is not a model call.
        request_id = self.runner.new_id("req_")
        try:
            request = _ANTHROPIC.parse(_json_object(await http.body()), dict(http.headers))
        except RequestShapeError as exc:
            return self._error(_ANTHROPIC, 400, f"Invalid request: {exc}", request_id)
        return JSONResponse({"input_tokens": count_input_tokens(request)}, headers={"request-id": request_id})

    async def _embeddings(self, http: Request) -> Response:
        try:
            answer = embeddings_body(_json_object(await http.body()))
        except ValueError as exc:
            answer = str(exc)
        if isinstance(answer, str):
            return JSONResponse({"error": {"message": answer, "type": "invalid_request_error"}}, status_code=400)
        return JSONResponse(answer)

    async def _models(self, http: Request) -> Response:
        if _dialect_of(http) is _ANTHROPIC:
            return JSONResponse(_anthropic.models_body(self.models))
        return JSONResponse(_openai.models_body(self.models))

    async def _http_error(self, http: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        message = (
            f"niceeval LLM server has no {http.method} {http.url.path}; it serves {ENDPOINTS}. "
            "Check the client's base_url: OpenAI clients take server.base_url (ending in /v1), "
            "Anthropic clients take server.anthropic_base_url (no /v1)."
        )
        dialect = _dialect_of(http)
        return self._error(dialect, status, message, self.runner.new_id("req_"))

    async def _complete(self, dialect: _Dialect, http: Request) -> Response:
        request_id = self.runner.new_id("req_")
        try:
            request = dialect.parse(_json_object(await http.body()), dict(http.headers))
        except RequestShapeError as exc:
            return self._error(dialect, 400, f"Invalid request: {exc}", request_id)
        self.runner.record(request)
        if not await self._pause(self.runner.latency):
            return self._stopped(dialect, request_id)
        try:
            reply = await self.runner.next_reply(request)
        except ScriptExhaustedError as exc:
            log.warning("%s", exc)
            return self._error(dialect, 500, str(exc), request_id, {"x-should-retry": "false"})
        except Exception as exc:  # a broken user script must still get an answer to the client
            log.exception("niceeval LLM script function failed")
            message = f"niceeval LLM script function raised {type(exc).__name__}: {exc}"
            return self._error(dialect, 500, message, request_id, {"x-should-retry": "false"})
        if not await self._pause(reply.latency):
            return self._stopped(dialect, request_id)
        if reply.fault is not None:
            return await self._fault(dialect, reply.fault, request, request_id)
        return self._render(dialect, reply, request, request_id, Response)

    def _render(
        self,
        dialect: _Dialect,
        reply: Reply,
        request: LLMRequest,
        request_id: str,
        response_class: type[Response],
    ) -> Response:
        resolved = self.runner.resolve(reply, request, call_prefix=dialect.call_prefix)
        response_id = self.runner.new_id(dialect.response_prefix)
        headers = {dialect.request_id_header: request_id}
        if not request.stream:
            body = json.dumps(dialect.render(resolved, request, response_id)).encode()
            return response_class(body, media_type="application/json", headers=headers)
        frames = dialect.stream(resolved, request, response_id)
        if response_class is not Response:
            return response_class("".join(frames).encode(), media_type=_SSE, headers=headers)
        return StreamingResponse(_each(frames), media_type=_SSE, headers=headers)

    async def _fault(self, dialect: _Dialect, fault: Fault, request: LLMRequest, request_id: str) -> Response:
        if fault.kind == "hang":
            await self._pause(None)
            return self._stopped(dialect, request_id)
        if fault.kind == "invalid_json":
            return Response(b"{this is not JSON (injected fault)", media_type="application/json")
        if fault.kind == "truncated":
            return self._render(dialect, Reply(text="This reply is cut short"), request, request_id, _TruncatedResponse)
        headers = {}
        if fault.retry_after is not None:
            headers["retry-after"] = f"{fault.retry_after:g}"
        if fault.should_retry is not None:
            headers["x-should-retry"] = "true" if fault.should_retry else "false"
        return self._error(dialect, fault.status, fault.message, request_id, headers)

    async def _pause(self, seconds: float | None) -> bool:
        """Wait `seconds` (`None`: until the server stops); `False` if the server stopped meanwhile."""
        if seconds == 0:
            return not self.stopping.is_set()
        try:
            await asyncio.wait_for(self.stopping.wait(), timeout=seconds)
        except TimeoutError:
            return True
        return False

    def _stopped(self, dialect: _Dialect, request_id: str) -> Response:
        message = "niceeval LLM server stopped before answering."
        return self._error(dialect, 503, message, request_id, {"x-should-retry": "false"})

    def _error(
        self,
        dialect: _Dialect,
        status: int,
        message: str,
        request_id: str,
        headers: dict[str, str] | None = None,
    ) -> Response:
        return JSONResponse(
            dialect.error(status, message, request_id),
            status_code=status,
            headers={dialect.request_id_header: request_id, **(headers or {})},
        )


async def _each(frames: list[str]) -> AsyncIterator[bytes]:
    # One chunk per event, so a client reading the stream sees each event as it is sent.
    for frame in frames:
        yield frame.encode()


def _dialect_of(http: Request) -> _Dialect:
    # The Anthropic SDK always sends `anthropic-version`; that tells the two apart on shared paths.
    return _ANTHROPIC if "anthropic-version" in http.headers else _OPENAI


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise RequestShapeError(f"the body is not valid JSON ({exc})") from exc
    if not isinstance(body, dict):
        raise RequestShapeError("the body must be a JSON object")
    return body
