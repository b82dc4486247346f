"""`LLMServer` (uvicorn on a background thread) and `serve` (uvicorn in the foreground)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Self

import uvicorn
from starlette.applications import Starlette

from niceeval._core.errors import UsageError
from niceeval.testing._app import ENDPOINTS, LLMApp
from niceeval.testing._replies import ReplyLike
from niceeval.testing._request import LLMRequest
from niceeval.testing._script import FaultRule, Script, ScriptRunner, echo

DEFAULT_MODELS = ("scripted",)
DEFAULT_SERVE_PORT = 8808
_LOOPBACK = {"127.0.0.1": socket.AF_INET, "::1": socket.AF_INET6}
_START_TIMEOUT = 10.0
_STOP_TIMEOUT = 10.0


class _Uvicorn(uvicorn.Server):
    """A uvicorn server that stops as soon as `stopping` is set, not on its next 0.1 s tick.

    Whatever stops it (`LLMServer.stop()` or a signal), `stopping` ends up set, which releases the
    requests that hang or sleep so that shutdown never waits for them.
    """

    def __init__(self, config: uvicorn.Config, stopping: asyncio.Event) -> None:
        super().__init__(config)
        self.stopping = stopping
        self.loop: asyncio.AbstractEventLoop | None = None

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        await super().serve(sockets=sockets)

    async def main_loop(self) -> None:
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864_000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), timeout=0.1)
        self.stopping.set()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # uvicorn's own shutdown sleeps a fixed 0.1 s before it checks the connections, which adds up
        # over a test suite that starts a server per test; here nothing can hold a connection open for
        # long (hangs and latencies end on `stopping`), so poll briefly instead.
        for server in self.servers:
            server.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        deadline = time.monotonic() + _STOP_TIMEOUT
        while self.server_state.connections or self.server_state.tasks:
            if time.monotonic() > deadline:
                for task in self.server_state.tasks:
                    task.cancel()
                break
            await asyncio.sleep(0.001)
        for server in self.servers:
            await server.wait_closed()

    def request_stop(self) -> None:
        """Ask the server to stop, from any thread."""
        self.should_exit = True
        loop = self.loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed between the check and the call
                loop.call_soon_threadsafe(self.stopping.set)


class LLMServer:
    """A local OpenAI- and Anthropic-compatible HTTP server that answers from a script.

    Use it as a context manager (sync or async); it runs uvicorn on a background thread with its own
    event loop, on `127.0.0.1` and a free port by default:

        with LLMServer(["Paris"]) as server:
            client = openai.OpenAI(base_url=server.base_url, api_key="test")
            ...
            assert server.requests[0].last_user_text == "Capital of France?"

    Args:
        script: A list of replies served first to last, or a function (sync or async) of the
            `LLMRequest` returning a reply. `None` starts with an empty list; add replies with `push()`.
        faults: A rule (sync or async function of the request) returning a `Fault` to inject, or `None`
            to let the request through to the script; see `fail_first()`. Faulted requests do not use up
            scripted replies.
        latency: Seconds added before every answer.
        host: `127.0.0.1` or `::1`; nothing else is allowed, as the server answers anyone who reaches it.
        port: The port; `0` picks a free one.
        models: The model ids `GET /v1/models` lists.
    """

    def __init__(
        self,
        script: Script | None = None,
        *,
        faults: FaultRule | None = None,
        latency: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        models: Sequence[str] = DEFAULT_MODELS,
    ) -> None:
        _check_loopback(host)
        self._runner = ScriptRunner(script, faults=faults, latency=latency)
        self._host = host
        self._requested_port = port
        self._models = tuple(models)
        self._port: int | None = None
        self._server: _Uvicorn | None = None
        self._thread: threading.Thread | None = None
        self._crash: BaseException | None = None

    @property
    def host(self) -> str:
        """The address the server listens on."""
        return self._host

    @property
    def port(self) -> int:
        """The port the server listens on (known once started)."""
        if self._port is None:
            raise UsageError(
                "the LLM server has no port until it starts; use it inside `with LLMServer() as s:`"
            )
        return self._port

    @property
    def url(self) -> str:
        """The server's root URL, e.g. `http://127.0.0.1:8808`."""
        return _root_url(self._host, self.port)

    @property
    def base_url(self) -> str:
        """The `base_url` for OpenAI clients, e.g. `http://127.0.0.1:8808/v1` (the SDK appends paths)."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The `base_url` for Anthropic clients, e.g. `http://127.0.0.1:8808` (the SDK adds `/v1/...`)."""
        return self.url

    @property
    def requests(self) -> list[LLMRequest]:
        """The completion requests received so far, oldest first (a copy), faulted ones included."""
        return self._runner.requests

    @property
    def remaining(self) -> int | None:
        """How many scripted replies are left in the queue; `None` when the script is a function."""
        return self._runner.remaining

    @property
    def latency(self) -> float:
        """Seconds added before every answer; may be changed while the server runs."""
        return self._runner.latency

    @latency.setter
    def latency(self, seconds: float) -> None:
        self._runner.latency = seconds

    @property
    def faults(self) -> FaultRule | None:
        """The fault rule; may be changed while the server runs."""
        return self._runner.faults

    @faults.setter
    def faults(self, rule: FaultRule | None) -> None:
        self._runner.faults = rule

    def push(self, *replies: ReplyLike) -> None:
        """Append replies to the scripted queue.

        Raises:
            UsageError: The script is a function, not a list.
        """
        self._runner.push(*replies)

    def set_script(self, script: Script | None) -> None:
        """Replace the script: a list of replies or a function of the request (drops unserved replies)."""
        self._runner.set_script(script)

    def start(self) -> Self:
        """Bind the port and serve on a background thread; returns once the server accepts requests.

        Raises:
            UsageError: The server was already started (a server starts once; make a new one).
            OSError: The port cannot be bound.
        """
        if self._thread is not None:
            raise UsageError("this LLM server was already started; an LLMServer starts once, make a new one")
        sock = bind_loopback(self._host, self._requested_port)
        self._port = sock.getsockname()[1]
        stopping = asyncio.Event()
        app = LLMApp(self._runner, self._models, stopping).asgi()
        self._server = _Uvicorn(_config(app, quiet=True), stopping)
        self._thread = threading.Thread(
            target=self._run, args=(self._server, sock), name=f"niceeval-llm-server-{self._port}", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + _START_TIMEOUT
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the LLM server on port {self._port} failed to start") from self._crash
            time.sleep(0.001)
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread to end; hanging requests get a 503. Safe to call twice.

        Raises:
            RuntimeError: The server thread did not end (a sync script function never returned).
        """
        if self._server is None or self._thread is None:
            return
        self._server.request_stop()
        self._thread.join(_STOP_TIMEOUT + 1)
        if self._thread.is_alive():
            raise RuntimeError(
                f"the LLM server thread did not stop within {_STOP_TIMEOUT + 1:g} s; "
                "is a sync script function blocking its event loop?"
            )

    def _run(self, server: _Uvicorn, sock: socket.socket) -> None:
        try:
            asyncio.run(server.serve(sockets=[sock]))
        except BaseException as exc:  # noqa: B036 - keep it for start(), a thread cannot raise to its caller
            self._crash = exc
        finally:
            sock.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        # Starting and stopping take milliseconds and the server has its own loop and thread, so
        # blocking the caller's loop briefly is simpler and safer than a worker thread.
        return self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def serve(
    host: str = "127.0.0.1",
    port: int = DEFAULT_SERVE_PORT,
    script: Script | None = None,
    *,
    faults: FaultRule | None = None,
    latency: float = 0.0,
    models: Sequence[str] = DEFAULT_MODELS,
) -> None:
    """Run the LLM server in the foreground until Ctrl-C or SIGTERM (the entry of `niceeval testing serve`).

    Prints the base URLs to use, then serves with uvicorn's usual logging.

    Args:
        host: `127.0.0.1` or `::1`.
        port: The port; `0` picks a free one (printed).
        script: As for `LLMServer`; by default `echo`, which answers with the last user message.
        faults: As for `LLMServer`.
        latency: Seconds added before every answer.
        models: The model ids `GET /v1/models` lists.

    Raises:
        UsageError: `host` is not a loopback address.
        OSError: The port cannot be bound.
    """
    runner = ScriptRunner(script if script is not None else echo, faults=faults, latency=latency)
    sock = bind_loopback(host, port)
    stopping = asyncio.Event()
    server = _Uvicorn(_config(LLMApp(runner, models, stopping).asgi(), quiet=False), stopping)
    url = _root_url(host, sock.getsockname()[1])
    print(
        f"niceeval LLM server listening on {url}\n"
        f"  OpenAI:    base_url={url}/v1\n"
        f"  Anthropic: base_url={url}\n"
        f"  Endpoints: {ENDPOINTS}\n"
        "Press Ctrl-C to stop.",
        flush=True,
    )
    try:
        # uvicorn re-raises the Ctrl-C it handled once shut down; for `serve` it is the normal way out.
        with contextlib.suppress(KeyboardInterrupt):
            server.run(sockets=[sock])
    finally:
        sock.close()


def bind_loopback(host: str, port: int) -> socket.socket:
    """A listening TCP socket on a loopback address.

    Raises:
        UsageError: `host` is not `127.0.0.1` or `::1`.
        OSError: The port cannot be bound.
    """
    _check_loopback(host)
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted connections only when the listening socket
    # says it is TCP; with protocol 0 every response waits ~40 ms on Nagle + delayed ACK.
    sock = socket.socket(_LOOPBACK[host], socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def _check_loopback(host: str) -> None:
    if host not in _LOOPBACK:
        raise UsageError(
            f"the niceeval LLM server binds only to 127.0.0.1 or ::1, not {host!r}: it answers anyone who "
            "reaches it and records what they send, so it must not be reachable from other machines"
        )


def _config(app: Starlette, *, quiet: bool) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        http="h11",
        ws="none",
        loop="asyncio",
        lifespan="off",
        # In tests, leave logging alone: uvicorn's own config would replace the handlers of the test run.
        log_config=None if quiet else uvicorn.config.LOGGING_CONFIG,
        log_level="warning" if quiet else "info",
        access_log=not quiet,
        timeout_graceful_shutdown=1,
    )


def _root_url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
