"""An event loop in a background thread that holds a suite's shared scope, for callers that are not async.

pytest calls each test from its own (sync) thread. To run evals there as `niceeval run` does, with one set of SDK
clients and one judge cache for the whole session, the loop runs in a portal thread and a host task opens the
scope once; work submitted from pytest's thread runs as tasks of that host, so it sees the scope.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar

import anyio
from anyio.abc import TaskStatus
from anyio.from_thread import BlockingPortal, start_blocking_portal
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from niceeval._run.judging import SuiteJudges
from niceeval.providers import save_price_memo, shared_clients, use_price_memo

T = TypeVar("T")
Work = tuple[Callable[[], Awaitable[Any]], "Future[Any]"]


class LoopHost:
    """Start with `open()`, submit coroutines with `run(fn)` from any thread, stop with `close()`.

    Args:
        root: The project root (where the judge cache lives).
        no_cache: Judges always call their model.
        cache_only: A judge verdict missing from the cache is inconclusive.
    """

    def __init__(self, root: Path, *, no_cache: bool = False, cache_only: bool = False) -> None:
        self.judges = SuiteJudges(root, no_cache=no_cache, cache_only=cache_only)
        self._portal_cm: AbstractContextManager[BlockingPortal] | None = None
        self._portal: BlockingPortal | None = None
        self._send: MemoryObjectSendStream[Work] | None = None
        self._host: Future[None] | None = None

    @property
    def portal(self) -> BlockingPortal:
        """The portal into the loop (for calls that need no shared scope)."""
        assert self._portal is not None, "LoopHost.open() first"
        return self._portal

    def open(self) -> None:
        use_price_memo(self.judges.root)  # .niceeval/prices.json, as `niceeval run` keeps it
        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        self._host, self._send = self._portal.start_task(self._serve)

    def submit(self, fn: Callable[[], Awaitable[T]]) -> Future[T]:
        """Run `fn()` as a task inside the shared scope; its result arrives in the returned future."""
        assert self._send is not None, "LoopHost.open() first"
        future: Future[T] = Future()
        self.portal.call(self._send.send, (fn, future))
        return future

    def run(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run `fn()` inside the shared scope and wait for its result."""
        return self.submit(fn).result()

    def close(self) -> None:
        """Finish: close the shared clients and the judge cache, stop the loop thread, save new prices."""
        if self._portal_cm is None:
            return
        try:
            if self._send is not None:
                self.portal.call(self._send.aclose)
            if self._host is not None:
                self._host.result()
        finally:
            self._portal_cm.__exit__(None, None, None)
            self._portal_cm = self._portal = None
            save_price_memo()
            use_price_memo(None)

    async def _serve(self, *, task_status: TaskStatus[MemoryObjectSendStream[Work]]) -> None:
        send, receive = anyio.create_memory_object_stream[Work](16)
        async with shared_clients():
            try:
                async with anyio.create_task_group() as tg:
                    task_status.started(send)
                    await self._dispatch(receive, tg)
            finally:
                with anyio.CancelScope(shield=True):
                    await self.judges.aclose()

    @staticmethod
    async def _dispatch(receive: MemoryObjectReceiveStream[Work], tg: anyio.abc.TaskGroup) -> None:
        async with receive:
            async for fn, future in receive:
                tg.start_soon(_settle, fn, future)


async def _settle(fn: Callable[[], Awaitable[Any]], future: Future[Any]) -> None:
    try:
        future.set_result(await fn())
    except BaseException as exc:  # handed to the caller's thread, which re-raises it
        if isinstance(exc, anyio.get_cancelled_exc_class()):
            future.cancel()
            raise
        future.set_exception(exc)
