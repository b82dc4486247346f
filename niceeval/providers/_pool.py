"""The shared SDK clients' HTTP transport: connections split into small pools, so no request scans them all.

httpcore's connection pool looks at every connection it holds on each request and each response closed, and for
an idle one asks the socket whether the server has hung up (`has_expired()`: a poll plus `getpeername`). At 64
requests in flight that scan is a large share of a suite's CPU, for a bare client loop as much as for niceeval
(bench/NOTES.md, "The HTTP client's pool"). Pools of at most `_SHARE` requests in flight keep it short: a request
goes to the first pool with room, and a new pool opens when all are full. They share one SSL context (building one
reads the trust store).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import httpx2

if TYPE_CHECKING:
    import ssl

_SHARE = 8
"""Requests in flight per pool before the next one takes them."""

_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")


def proxied() -> bool:
    """True if the environment names a proxy: httpx only reads it for a client built without a transport."""
    return any(os.environ.get(name) or os.environ.get(name.upper()) for name in _PROXY_VARIABLES)


class _Pool:
    __slots__ = ("busy", "transport")

    def __init__(self, transport: httpx2.AsyncHTTPTransport) -> None:
        self.transport = transport
        self.busy = 0


class _Held(httpx2.AsyncByteStream):
    """A response body that gives its pool's slot back when it is closed (read to the end, or dropped)."""

    __slots__ = ("_pool", "_stream")

    def __init__(self, stream: httpx2.AsyncByteStream, pool: _Pool) -> None:
        self._stream: httpx2.AsyncByteStream | None = stream
        self._pool = pool

    async def __aiter__(self) -> AsyncIterator[bytes]:
        assert self._stream is not None
        async for part in self._stream:
            yield part

    async def aclose(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            try:
                await stream.aclose()
            finally:  # once its connection is back in the pool, where the next request of this pool finds it
                self._pool.busy -= 1


class SplitTransport(httpx2.AsyncBaseTransport):
    """An `httpx2` transport over several `AsyncHTTPTransport`s, each taking up to `_SHARE` requests at a time."""

    def __init__(self, limits: httpx2.Limits, *, verify: ssl.SSLContext | bool = True) -> None:
        self._limits = limits
        self._verify = httpx2.create_ssl_context(verify)
        self._pools: list[_Pool] = []

    def _pool(self) -> _Pool:
        for pool in self._pools:
            if pool.busy < _SHARE:
                return pool
        pool = _Pool(httpx2.AsyncHTTPTransport(verify=self._verify, limits=self._limits))
        self._pools.append(pool)
        return pool

    @property
    def in_flight(self) -> list[int]:
        """Requests each pool has out now, oldest pool first."""
        return [pool.busy for pool in self._pools]

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        pool = self._pool()
        pool.busy += 1
        try:
            response = await pool.transport.handle_async_request(request)
        except BaseException:
            pool.busy -= 1
            raise
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        response.stream = _Held(response.stream, pool)
        return response

    async def aclose(self) -> None:
        pools, self._pools = self._pools, []
        for pool in pools:
            await pool.transport.aclose()
