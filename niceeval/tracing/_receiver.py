"""The OTLP/HTTP traces endpoint niceeval serves on 127.0.0.1 for a suite: `POST /v1/traces`, protobuf or JSON.

It runs uvicorn on its own thread (the project's loopback server), so an agent that blocks niceeval's event loop
still gets its spans accepted. What it cannot read gets a 400 with the reason and is counted; the suite goes on.
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass
from typing import Any

from niceeval._core.loopback import ServerThread, bind_loopback, root_url, uvicorn_config
from niceeval.tracing._collector import TraceCollector
from niceeval.tracing._otlp import BadPayload, decode, decompress

TRACES_PATH = "/v1/traces"
MAX_BODY = 32 * 1024 * 1024
"""The largest request body (after decompression) the receiver reads; the OTLP exporters send far less."""


@dataclass(slots=True)
class Refusals:
    """Requests the receiver could not take (counted; the last reason kept for the warning)."""

    count: int = 0
    last: str = ""


class TraceReceiver:
    """An OTLP/HTTP receiver feeding `collector`; `start()` serves, `close()` stops (safe to call twice)."""

    def __init__(self, collector: TraceCollector, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.collector = collector
        self.refusals = Refusals()
        self._host = host
        self._port = port
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
            sock = bind_loopback(self._host, self._port)
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
        if path != TRACES_PATH:
            await _answer(send, 404, self._refuse(f"no OTLP endpoint at {path}: {self._where()}"))
            return
        if method != "POST":
            await _answer(send, 405, f"{method} {path}: {self._where()}")
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
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
