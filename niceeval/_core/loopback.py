"""Serving an ASGI app on a loopback address from a background thread: niceeval's local servers share this.

`niceeval.testing`'s scripted LLM server and the agents' recording bridge each run uvicorn on its own thread and
event loop, bound to 127.0.0.1 or ::1 only (they answer anyone who reaches them), and stop within milliseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from typing import Any

import uvicorn

from niceeval._core.errors import UsageError

LOOPBACK = {"127.0.0.1": socket.AF_INET, "::1": socket.AF_INET6}
_START_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0


class Uvicorn(uvicorn.Server):
    """A uvicorn server that stops as soon as `stopping` is set, not on its next 0.1 s tick.

    Whatever stops it (`request_stop()` or a signal), `stopping` ends up set, which releases the requests that
    wait on it, so that shutdown never waits for them.
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
        # uvicorn's own shutdown sleeps a fixed 0.1 s before it checks the connections, which adds up over a
        # test suite that starts a server per test; requests here end on `stopping`, so poll briefly instead.
        for server in self.servers:
            server.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        deadline = time.monotonic() + STOP_TIMEOUT
        while self.server_state.connections or self.server_state.tasks:
            if time.monotonic() > deadline:
                for task in self.server_state.tasks:
                    task.cancel()
                break
            await asyncio.sleep(0.001)
        for server in self.servers:
            await server.wait_closed()
        await self.lifespan.shutdown()

    def request_stop(self) -> None:
        """Ask the server to stop, from any thread."""
        self.should_exit = True
        loop = self.loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed between the check and the call
                loop.call_soon_threadsafe(self.stopping.set)


class ServerThread:
    """A uvicorn server on `sock` from a daemon thread with its own event loop.

    Args:
        config: The server's settings, from `uvicorn_config`.
        sock: A listening socket from `bind_loopback`; closed when the server ends.
        stopping: Set when the server stops (the app may wait on it to release long requests).
        name: The thread's name, and how errors name the server.
    """

    def __init__(self, config: uvicorn.Config, sock: socket.socket, stopping: asyncio.Event, *, name: str) -> None:
        self.server = Uvicorn(config, stopping)
        self.name = name
        self._sock = sock
        self._crash: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        """Serve; returns once the server accepts requests.

        Raises:
            RuntimeError: The server did not start.
        """
        self._thread.start()
        deadline = time.monotonic() + _START_TIMEOUT
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self.name} failed to start") from self._crash
            time.sleep(0.001)

    def stop(self, hint: str = "") -> None:
        """Stop serving and wait for the thread to end. Safe to call twice.

        Raises:
            RuntimeError: The thread did not end in time (`hint` says what may block it).
        """
        if self._thread.ident is None:
            self._sock.close()
            return
        self.server.request_stop()
        self._thread.join(STOP_TIMEOUT + 1)
        if self._thread.is_alive():
            raise RuntimeError(f"{self.name} did not stop within {STOP_TIMEOUT + 1:g} s{hint}")

    def _run(self) -> None:
        try:
            asyncio.run(self.server.serve(sockets=[self._sock]))
        except BaseException as exc:  # noqa: B036 - keep it for start(), a thread cannot raise to its caller
            self._crash = exc
        finally:
            self._sock.close()


def bind_loopback(host: str, port: int) -> socket.socket:
    """A listening TCP socket on a loopback address.

    Raises:
        UsageError: `host` is not `127.0.0.1` or `::1`.
        OSError: The port cannot be bound.
    """
    check_loopback(host, "a niceeval local server")
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted connections only when the listening socket
    # says it is TCP; with protocol 0 every response waits on Nagle's algorithm and the client's delayed ACK.
    sock = socket.socket(LOOPBACK[host], socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def check_loopback(host: str, server: str) -> None:
    """Refuse a non-loopback address for `server` (named in the error).

    Raises:
        UsageError: `host` is not `127.0.0.1` or `::1`.
    """
    if host not in LOOPBACK:
        raise UsageError(
            f"{server} binds only to 127.0.0.1 or ::1, not {host!r}: it answers anyone who reaches it and records "
            "what they send, so it must not be reachable from other machines"
        )


def uvicorn_config(app: Any, *, quiet: bool, proxy: bool = False) -> uvicorn.Config:
    """uvicorn settings for a local server.

    Args:
        app: The ASGI application.
        quiet: Leave logging alone (uvicorn's own config would replace the handlers of a test run).
        proxy: The app relays another server's answers: no `Date` or `Server` headers of uvicorn's beside the
            relayed ones, and the app's lifespan runs (to open and close its client).
    """
    return uvicorn.Config(
        app,
        http="h11",
        ws="none",
        loop="asyncio",
        lifespan="on" if proxy else "off",
        server_header=not proxy,
        date_header=not proxy,
        log_config=None if quiet else uvicorn.config.LOGGING_CONFIG,
        log_level="warning" if quiet else "info",
        access_log=not quiet,
        timeout_graceful_shutdown=1,
    )


def root_url(host: str, port: int) -> str:
    """`http://host:port`, with IPv6 addresses in brackets."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
