"""Blocking work off the event loop: user code (sync evals, sync agents) in daemon threads, so a timeout can
abandon it for good, and niceeval's own lazy imports in a worker thread, so loading an SDK never stalls the evals.
"""

from __future__ import annotations

import contextvars
import importlib
import threading
import weakref
from collections.abc import Callable, MutableMapping
from concurrent.futures import CancelledError
from contextlib import suppress
from typing import TypeVar

import anyio
from anyio.from_thread import BlockingPortal

T = TypeVar("T")


async def call_in_thread(fn: Callable[[BlockingPortal], T], *, portal: BlockingPortal | None = None) -> T:
    """Run `fn(portal)` in a new daemon thread and wait for it; cancelling the wait abandons the thread.

    Not `anyio.to_thread.run_sync`: its workers are not daemon threads, so one abandoned on a timeout keeps
    the process alive at exit until the user's code returns (maybe never), and without `abandon_on_cancel`
    the timeout does not fire at all. `fn` may call back into the event loop through `portal` (a sync
    eval's `t.send` does): the caller's, when it opened one already (a sync eval's context is built with it),
    else one opened for the call. Whatever `fn` raises is re-raised here as it is.
    """
    returned: list[T] = []
    raised: list[BaseException] = []
    if portal is not None:
        await _in_thread(fn, portal, returned, raised)
    else:
        async with BlockingPortal() as own:
            await _in_thread(fn, own, returned, raised)
    # Raised outside the portal: inside it, its task group would wrap the error in an ExceptionGroup.
    if raised:
        error = raised.pop()  # not kept in this frame, which its traceback holds: no reference cycle
        try:
            raise error
        finally:
            del error
    return returned[0]


async def _in_thread(
    fn: Callable[[BlockingPortal], T], portal: BlockingPortal, returned: list[T], raised: list[BaseException]
) -> None:
    done = anyio.Event()

    def target() -> None:
        try:
            returned.append(fn(portal))
        except BaseException as exc:
            raised.append(exc)
        # Once the waiter is cancelled the portal stops, and nobody wants this result any more.
        with suppress(RuntimeError, CancelledError):
            portal.call(done.set)

    thread = threading.Thread(
        target=contextvars.copy_context().run, args=(target,), name="niceeval-sync-call", daemon=True
    )
    thread.start()
    await done.wait()


_LOADED: set[str] = set()
"""Modules `load_off_loop` finished importing (a module in `sys.modules` may still be half-imported by a thread)."""


async def load_off_loop(*modules: str) -> None:
    """Import `modules` in a worker thread while the event loop keeps running the other evals.

    niceeval loads heavy libraries (provider SDKs, httpx, the bridge's server) on first use; imported inside a
    coroutine they would stall every eval in flight for as long as the import takes.
    """
    missing = [name for name in modules if name not in _LOADED]
    if missing:
        await once_off_loop(f"import {' '.join(missing)}", lambda: _load(missing), lambda: set(missing) <= _LOADED)


_FLIGHTS: MutableMapping[object, dict[str, anyio.Lock]] = weakref.WeakKeyDictionary()


async def once_off_loop(key: str, work: Callable[[], object], done: Callable[[], bool]) -> None:
    """`work()` in a worker thread unless `done()`, by the first coroutine to ask; the others asking meanwhile (every
    eval of a suite, at its start) wait for that one instead of each taking a thread of its own."""
    if done():
        return
    per_loop = _FLIGHTS.setdefault(anyio.lowlevel.current_token().native_token, {})
    async with per_loop.setdefault(key, anyio.Lock()):
        if not done():
            await anyio.to_thread.run_sync(work)


def _load(modules: list[str]) -> None:
    for name in modules:
        importlib.import_module(name)
        _LOADED.add(name)
