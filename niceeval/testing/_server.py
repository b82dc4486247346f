"""`LLMServer` (uvicorn on a background thread) and `serve` (uvicorn in the foreground)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from types import TracebackType
from typing import Self

from niceeval._core.errors import UsageError
from niceeval._core.loopback import ServerThread, Uvicorn, bind_loopback, check_loopback, root_url, uvicorn_config
from niceeval.testing._app import ENDPOINTS, LLMApp
from niceeval.testing._script import FaultRule, Script, Scripted, ScriptRunner, echo

DEFAULT_MODELS = ("scripted",)
DEFAULT_SERVE_PORT = 8808


class LLMServer(Scripted):
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
        check_loopback(host, "the niceeval LLM server")
        super().__init__(script, faults=faults, latency=latency)
        self._host = host
        self._requested_port = port
        self._models = tuple(models)
        self._port: int | None = None
        self._thread: ServerThread | None = None

    @property
    def host(self) -> str:
        """The address the server listens on."""
        return self._host

    @property
    def port(self) -> int:
        """The port the server listens on (known once started)."""
        if self._port is None:
            raise UsageError("the LLM server has no port until it starts; use it inside `with LLMServer() as s:`")
        return self._port

    @property
    def url(self) -> str:
        """The server's root URL, e.g. `http://127.0.0.1:8808`."""
        return root_url(self._host, self.port)

    @property
    def base_url(self) -> str:
        """The `base_url` for OpenAI clients, e.g. `http://127.0.0.1:8808/v1` (the SDK appends paths)."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The `base_url` for Anthropic clients, e.g. `http://127.0.0.1:8808` (the SDK adds `/v1/...`)."""
        return self.url

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
        self._thread = ServerThread(
            uvicorn_config(app, quiet=True), sock, stopping, name=f"the LLM server on port {self._port}"
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread to end; hanging requests get a 503. Safe to call twice.

        Raises:
            RuntimeError: The server thread did not end (a sync script function never returned).
        """
        if self._thread is not None:
            self._thread.stop("; is a sync script function blocking its event loop?")

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
    # nothing reads this server's request log: kept, it would grow with every request for as long as it serves
    runner = ScriptRunner(script if script is not None else echo, faults=faults, latency=latency, keep_requests=False)
    sock = bind_loopback(host, port)
    stopping = asyncio.Event()
    server = Uvicorn(uvicorn_config(LLMApp(runner, models, stopping).asgi(), quiet=False), stopping)
    url = root_url(host, sock.getsockname()[1])
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
