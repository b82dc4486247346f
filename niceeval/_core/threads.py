"""Blocking work off the event loop: user code (sync evals, sync agents, sync tools) on a pool of daemon threads,
so a timeout can abandon it for good, and niceeval's own lazy imports in a worker thread, so loading an SDK never
stalls the evals; and the way back into the loop from such a thread (`Portal`, `TaskPortal`).
"""

from __future__ import annotations

import contextvars
import importlib
import os
import sys
import threading
import weakref
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import Future
from contextlib import suppress
from dataclasses import dataclass, field
from queue import Empty, SimpleQueue
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, TypeVarTuple, Unpack

import anyio
from anyio.lowlevel import EventLoopToken

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

BUSY_NAME = "niceeval-sync-call"
"""A pool thread's name while it runs a call (user code sees it as `threading.current_thread().name`)."""
IDLE_NAME = "niceeval-sync-idle"
"""A pool thread's name while it waits for the next call: it holds nothing of the last one."""
IDLE_EXIT_S = 30.0
"""A pool thread idle this long ends: a burst of concurrency leaves no crowd of threads behind for good."""


async def call_in_thread(fn: Callable[[], T]) -> T:
    """Run `fn()` on a pool thread and wait for it; cancelling the wait abandons the call.

    Not `anyio.to_thread.run_sync`: its workers are not daemon threads, so one abandoned on a timeout keeps the
    process alive at exit until the user's code returns (maybe never), and without `abandon_on_cancel` the
    timeout does not fire at all. The pool's threads are daemon threads, reused from call to call (starting a
    thread per call was the largest per-eval cost of a large suite), and a call for an idle thread is put on its
    queue when the loop's current turn is done (`_Wakeups.hand`): `fn` runs in a copy of the caller's
    context (contextvars never leak between calls), under the thread name `niceeval-sync-call`, with no
    asyncio event loop set for the thread. A `threading.local` value that `fn` leaves behind may be seen by a
    later call on the same thread, as with any thread pool (`anyio.to_thread`, `concurrent.futures`).
    Whatever `fn` raises is re-raised here as it is.
    """
    return await _pool.call(fn)


@dataclass(eq=False, slots=True)
class _Call(Generic[T]):
    """One call handed from the event loop to a pool thread; the thread drops `fn` and `context` once it ran."""

    fn: Callable[[], T] | None
    context: contextvars.Context | None
    wakeups: _Wakeups
    done: anyio.Event = field(default_factory=anyio.Event)
    returned: list[T] = field(default_factory=list)
    raised: list[BaseException] = field(default_factory=list)

    def run(self) -> Callable[[], None]:
        """Call `fn`, keep its outcome, forget `fn` and its context; what wakes the waiter, to call afterwards."""
        fn, context = self.fn, self.context
        self.fn = self.context = None
        assert fn is not None and context is not None
        try:
            self.returned.append(context.run(fn))
        except BaseException as exc:
            self.raised.append(exc)
        del fn, context
        wakeups, done = self.wakeups, self.done
        return lambda: wakeups.post(done)


class _Wakeups:
    """One event loop's traffic with the pool: the calls it made in the current turn, handed to the pool together
    once the turn's other work is done (`hand`), and the waiters whose calls have returned, woken together by one
    callback on the loop.

    A call handed over at once woke its thread while the loop still had the rest of its turn to run (the next
    evals' rows to read, lines to print, runs to store): that thread then waited for the interpreter, took it at
    the loop's next system call, and the loop waited to get it back.

    A pool thread that finds none waiting schedules the callback; the threads that return before the loop runs it
    only add their waiter. Each call scheduling its own (`run_sync_soon`) wrote a byte to the loop's self-pipe per
    call, and had the loop wake from `epoll` and read it back: three system calls per call, and at each the
    interpreter changed hands. Never waits for the loop: once a waiter gave up (a timeout) or its loop ended,
    nobody wants the outcome any more.
    """

    __slots__ = ("_backend", "_loop", "_lock", "_waiting", "_handing")

    def __init__(self, token: EventLoopToken) -> None:
        self._backend = token.backend_class
        self._loop = weakref.ref(token.native_token)
        """The loop, not kept alive by its own entry in `_WAKEUPS`."""
        self._lock = threading.Lock()
        self._waiting: list[anyio.Event] = []
        self._handing: list[tuple[_Call[Any], SimpleQueue[_Call[Any]]]] = []
        """Calls made in this turn of the loop, not yet on their pool's queue (touched on the loop's thread only)."""

    def hand(self, call: _Call[Any], calls: SimpleQueue[_Call[Any]]) -> None:
        """Put `call` on the pool's queue `calls` once the loop's current turn is done (on the loop's thread)."""
        self._handing.append((call, calls))
        if len(self._handing) > 1:  # the hand-over is scheduled already
            return
        loop = self._loop()
        try:
            if loop is None:
                raise RuntimeError("the event loop is gone")
            self._backend.run_sync_soon(self._hand_over, (), loop)
        except (anyio.RunFinishedError, RuntimeError):  # the loop is ending: no later turn, so hand them now
            self._hand_over()

    def _hand_over(self) -> None:
        handing, self._handing = self._handing, []
        for call, calls in handing:
            calls.put(call)

    def post(self, done: anyio.Event) -> None:
        """Have the loop set `done` (from a pool thread)."""
        with self._lock:
            self._waiting.append(done)
            if len(self._waiting) > 1:  # the callback is scheduled and has not taken the list yet
                return
        loop = self._loop()
        try:
            if loop is None:
                raise RuntimeError("the event loop is gone")
            self._backend.run_sync_soon(self._wake, (), loop)
        except (anyio.RunFinishedError, RuntimeError):  # the loop has ended: nobody waits
            with self._lock:
                self._waiting.clear()

    def _wake(self) -> None:
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for done in waiting:
            done.set()


_WAKEUPS: MutableMapping[object, _Wakeups] = weakref.WeakKeyDictionary()
"""Each running event loop's `_Wakeups`, by the loop (asyncio's loop object, trio's runner)."""


def _wakeups() -> _Wakeups:
    """The running event loop's `_Wakeups` (made on its first call into the pool)."""
    token = anyio.lowlevel.current_token()
    found = _WAKEUPS.get(token.native_token)
    if found is None:
        found = _WAKEUPS[token.native_token] = _Wakeups(token)
    return found


class WorkerPool:
    """Daemon threads taking calls from one queue; a new thread starts only when none is idle, and a thread idle
    for `idle_exit_s` ends."""

    def __init__(self, *, idle_exit_s: float = IDLE_EXIT_S) -> None:
        self._idle_exit_s = idle_exit_s
        self._calls: SimpleQueue[_Call[Any]] = SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        """Threads waiting for a call that no submitted call has claimed yet."""

    async def call(self, fn: Callable[[], T]) -> T:
        """`fn()` on one of the pool's threads (see `call_in_thread`)."""
        wakeups = _wakeups()
        call = _Call(fn=fn, context=contextvars.copy_context(), wakeups=wakeups)
        with self._lock:
            reserved = self._idle > 0
            if reserved:
                self._idle -= 1
        if reserved:  # an idle thread is kept for it; it gets the call when this turn of the loop is done
            wakeups.hand(call, self._calls)
        else:  # started before the call is queued: a thread that cannot start leaves no call behind
            threading.Thread(target=self._serve, name=BUSY_NAME, daemon=True).start()
            self._calls.put(call)
        await call.done.wait()
        if call.raised:
            error = call.raised.pop()  # not kept in this frame, which its traceback holds: no reference cycle
            try:
                raise error
            finally:
                del error
        return call.returned[0]

    def _serve(self) -> None:
        thread = threading.current_thread()
        while True:
            try:
                call = self._calls.get(timeout=self._idle_exit_s)
            except Empty:
                with self._lock:
                    if self._idle > 0:  # the others waiting cover every queued call: this one may go
                        self._idle -= 1
                        return
                continue
            thread.name = BUSY_NAME  # restored: the last call's code may have renamed its thread
            wake = call.run()
            del call
            with suppress(Exception):  # a custom event loop policy that fails to unset must not leave the waiter
                _forget_event_loop()
            thread.name = IDLE_NAME
            with self._lock:
                self._idle += 1
            wake()
            del wake


def _forget_event_loop() -> None:
    """Unset an asyncio event loop the call set for its thread (`asyncio.set_event_loop`): a fresh thread has none."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None:  # never imported: nothing can have set one
        asyncio.set_event_loop(None)


_pool = WorkerPool()


def _empty_pool() -> None:
    """The child of a fork has none of its parent's threads: it starts with a pool of its own."""
    global _pool
    _pool = WorkerPool()


if sys.platform != "win32":  # Windows has no fork
    os.register_at_fork(after_in_child=_empty_pool)


class Portal(Protocol):
    """A thread's way into the event loop: `call` runs a coroutine function there and blocks until it returns
    (`anyio.from_thread.BlockingPortal` is one; `TaskPortal` is a run's)."""

    def call(self, func: Callable[[Unpack[Ts]], Awaitable[T]], *args: *Ts) -> T: ...


class TaskPortal:
    """A portal whose calls run as tasks of one task group: a plain `def` eval's way into the loop, made with the
    run's task group so the run's deadline and cancellation reach its calls as they reach the run's own tasks.

    What `BlockingPortal.call` does, without the portal's own task group (entered and left once per run, that
    was a sizeable part of a cheap sync eval's cost) and with one hop into the loop per call instead of two. A
    call after the task group ended (a thread abandoned on a timeout, still going) raises `RuntimeError`.
    """

    __slots__ = ("_task_group", "_token", "_loop_thread")

    def __init__(self, task_group: TaskGroup) -> None:
        self._task_group = task_group
        self._token = anyio.lowlevel.current_token()
        self._loop_thread = threading.get_ident()

    def call(self, func: Callable[[Unpack[Ts]], Awaitable[T]], *args: *Ts) -> T:
        """`await func(*args)` as a task of the task group, from a thread other than the loop's; its outcome."""
        if threading.get_ident() == self._loop_thread:
            raise RuntimeError("TaskPortal.call waits for the event loop: call it from another thread, not the loop's")
        future: Future[T] = Future()
        group = self._task_group

        def spawn() -> None:
            try:
                group.start_soon(_settle, func, args, future)
            except RuntimeError as exc:  # the task group has ended: it starts nothing more
                future.set_exception(exc)

        self._token.backend_class.run_sync_soon(spawn, (), self._token.native_token)
        return future.result()


async def _settle(func: Callable[[Unpack[Ts]], Awaitable[T]], args: tuple[*Ts], future: Future[T]) -> None:
    """Await `func(*args)` and hand its outcome to `future`. A cancellation cancels the future (the caller's
    `result()` raises `concurrent.futures.CancelledError`) and goes on up, as a `BaseException` that is not an
    `Exception` does after it is handed over."""
    try:
        returned = await func(*args)
    except anyio.get_cancelled_exc_class():
        future.cancel()
        raise
    except BaseException as exc:
        future.set_exception(exc)
        if not isinstance(exc, Exception):
            raise
    else:
        future.set_result(returned)


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
