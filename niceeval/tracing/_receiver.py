"""The OTLP/HTTP traces endpoint niceeval serves: `POST /v1/traces`, protobuf or JSON.

It runs uvicorn on its own thread (the project's loopback server), so an agent that blocks niceeval's event loop
still gets its spans accepted. What it cannot read gets a 400 with the reason and is counted; the suite goes on.
A suite's receiver listens on 127.0.0.1; `niceeval watch`'s may listen beyond loopback, and then only with a
bearer token every request must carry, and it answers `GET /status` with what its `status` callable says.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import socket
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from niceeval._core.errors import UsageError
from niceeval._core.loopback import LOOPBACK, ServerThread, bind_loopback, root_url, uvicorn_config
from niceeval._core.spans import Span
from niceeval.tracing._otlp import BadPayload, decode, decompress

TRACES_PATH = "/v1/traces"
STATUS_PATH = "/status"
MAX_BODY = 32 * 1024 * 1024
"""The largest request body (after decompression) the receiver reads; the OTLP exporters send far less."""


@dataclass(slots=True)
class Refusals:
    """Requests the receiver could not take (counted; the last reason kept for the warning)."""

    count: int = 0
    last: str = ""


class SpanSink(Protocol):
    """Where the receiver puts the spans it decodes (the suite's collector, the watcher's trace assembler)."""

    def add(self, spans: Iterable[Span]) -> int:
        """Take `spans`; how many were refused (answered as OTLP's partial success)."""
        ...


class TraceReceiver:
    """An OTLP/HTTP receiver feeding `collector`; `start()` serves, `close()` stops (safe to call twice).

    Args:
        collector: Where decoded spans go.
        host: The address to listen on: loopback, or any other with `token`.
        port: The port (0: a free one).
        token: A bearer token every request must send (`Authorization: Bearer TOKEN`); required beyond loopback.
        status: What `GET /status` answers, as JSON (None: no status endpoint).
    """

    def __init__(
        self,
        collector: SpanSink,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        status: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        if host not in LOOPBACK and not token:
            raise UsageError(
                f"listening on {host!r} reaches beyond this machine: give a token every exporter sends "
                "(--token, or NICEEVAL_WATCH_TOKEN), or listen on 127.0.0.1"
            )
        self.collector = collector
        self.refusals = Refusals()
        self._host = host
        self._port = port
        self._token = token
        self._status = status
        self._lock = threading.Lock()
        self._server: ServerThread | None = None
        self.url = ""
        """`http://127.0.0.1:PORT` once started."""

    @property
    def endpoint(self) -> str:
        """The traces URL to give an exporter (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)."""
        return self.url + TRACES_PATH

    def start(self) -> TraceReceiver:
        """Serve (once; later calls do nothing).

        Raises:
            UsageError: `host` is not a loopback address.
            OSError: The port cannot be bound.
            RuntimeError: The server did not start.
        """
        with self._lock:
            if self._server is not None:
                return self
            sock = bind_loopback(self._host, self._port) if self._host in LOOPBACK else _bind(self._host, self._port)
            port = sock.getsockname()[1]
            server = ServerThread(
                uvicorn_config(self, quiet=True), sock, asyncio.Event(), name=f"the niceeval OTLP receiver on {port}"
            )
            server.start()
            self._server, self.url = server, root_url(self._host, port)
        return self

    async def close(self) -> None:
        """Stop serving (milliseconds)."""
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.stop()

    def refusal_summary(self) -> str | None:
        """The suite-end warning about refused requests, or None."""
        if not self.refusals.count:
            return None
        return f"the OTLP receiver refused {self.refusals.count} request(s); the last: {self.refusals.last}"

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """The ASGI application."""
        if scope["type"] != "http":
            return
        path, method = scope["path"], scope["method"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if self._token is not None and not _bearer_is(headers.get("authorization", ""), self._token):
            await _answer(send, 401, self._refuse(f"{method} {path}: no valid `Authorization: Bearer` token"))
            return
        if path == STATUS_PATH and self._status is not None and method == "GET":
            await _send(send, 200, "application/json", json.dumps(self._status()).encode())
            return
        if path != TRACES_PATH:
            await _answer(send, 404, self._refuse(f"no OTLP endpoint at {path}: {self._where()}"))
            return
        if method != "POST":
            await _answer(send, 405, f"{method} {path}: {self._where()}")
            return
        content_type = headers.get("content-type", "")
        try:
            body = await _body(receive, MAX_BODY)
            body = decompress(body, headers.get("content-encoding", ""), MAX_BODY)
            spans = decode(body, content_type)
        except BadPayload as exc:
            await _answer(send, 400, self._refuse(str(exc)))
            return
        refused = self.collector.add(spans)
        await _accepted(send, content_type, refused)

    def _where(self) -> str:
        return f"niceeval's OTLP receiver takes traces by POST at {self.endpoint}"

    def _refuse(self, reason: str) -> str:
        self.refusals.count += 1
        self.refusals.last = reason
        return reason


def _bearer_is(header: str, token: str) -> bool:
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def _bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host` (the watcher beyond loopback, behind its token)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
    except OSError:
        sock.close()
        raise
    return sock


async def _body(receive: Any, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise BadPayload("the request ended before its body")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BadPayload(f"the body is over {limit:,} bytes; export smaller batches")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _accepted(send: Any, content_type: str, refused: int) -> None:
    """OTLP's success answer in the request's encoding, with the refused spans as a partial success."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    message = f"niceeval's trace collector is full: {refused} span(s) dropped" if refused else ""
    if content_type.split(";", 1)[0].strip().lower() == "application/json":
        partial = {"partialSuccess": {"rejectedSpans": str(refused), "errorMessage": message}} if refused else {}
        await _send(send, 200, "application/json", json.dumps(partial).encode())
        return
    response: Any = ExportTraceServiceResponse()
    if refused:
        response.partial_success.rejected_spans = refused
        response.partial_success.error_message = message
    await _send(send, 200, "application/x-protobuf", response.SerializeToString())


async def _answer(send: Any, status: int, text: str) -> None:
    await _send(send, status, "text/plain; charset=utf-8", (text + "\n").encode())


async def _send(send: Any, status: int, content_type: str, body: bytes) -> None:
    headers = [(b"content-type", content_type.encode("latin-1")), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
