"""Sync evals, agents and tools run on a pool of reused daemon threads: what one call leaves on its thread (its
context variables, its thread's name, an asyncio loop, references to its objects) never reaches the next call,
an abandoned call never blocks the others, and an idle pool shrinks."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import os
import threading
import time
import warnings
import weakref
from typing import Any

import anyio
import pytest

from niceeval._core.threads import BUSY_NAME, IDLE_NAME, WorkerPool, _Wakeups, call_in_thread

pytestmark = pytest.mark.anyio

REQUEST = contextvars.ContextVar("REQUEST", default="unset")


def _thread_id() -> int:
    return threading.get_ident()


async def test_a_second_call_reuses_the_idle_thread() -> None:
    pool = WorkerPool()  # its own: the shared pool may hold other idle threads from earlier tests
    first = await pool.call(_thread_id)
    second = await pool.call(_thread_id)
    assert first == second != threading.get_ident()


async def test_a_call_runs_on_a_daemon_thread_named_for_it() -> None:
    thread = await call_in_thread(threading.current_thread)
    assert thread.daemon
    assert thread.name == IDLE_NAME  # once the call is over
    assert await call_in_thread(lambda: threading.current_thread().name) == BUSY_NAME


async def test_context_variables_set_by_a_call_do_not_reach_the_next() -> None:
    pool = WorkerPool()  # its own: the shared pool may hold other idle threads from earlier tests
    REQUEST.set("caller")
    assert await pool.call(REQUEST.get) == "caller"
    await pool.call(lambda: REQUEST.set("inside"))
    assert await pool.call(REQUEST.get) == "caller"
    assert REQUEST.get() == "caller"


async def test_a_thread_renamed_by_a_call_gets_its_name_back() -> None:
    pool = WorkerPool()  # its own: the shared pool may hold other idle threads from earlier tests

    def rename() -> int:
        threading.current_thread().name = "mine"
        return threading.get_ident()

    renamed = await pool.call(rename)
    name, ident = await pool.call(lambda: (threading.current_thread().name, threading.get_ident()))
    assert (name, ident) == (BUSY_NAME, renamed)


async def test_an_event_loop_set_by_a_call_is_gone_for_the_next() -> None:
    pool = WorkerPool()  # its own: the shared pool may hold other idle threads from earlier tests
    loop = asyncio.new_event_loop()

    def set_loop() -> int:
        asyncio.set_event_loop(loop)
        return threading.get_ident()

    def current_loop() -> tuple[int, str]:
        try:
            return threading.get_ident(), repr(asyncio.get_event_loop())
        except RuntimeError as exc:
            return threading.get_ident(), str(exc)

    try:
        ident = await pool.call(set_loop)
        assert await pool.call(current_loop) == (ident, f"There is no current event loop in thread '{BUSY_NAME}'.")
    finally:
        loop.close()


async def test_an_idle_thread_holds_nothing_of_the_last_call() -> None:
    class Payload:
        pass

    held = [Payload()]
    seen = weakref.ref(held[0])
    gc.disable()
    try:
        returned = await call_in_thread(held.pop)
        assert seen() is returned
        del returned
        assert seen() is None  # freed by reference counting alone: no thread kept the call
    finally:
        gc.enable()


async def test_errors_are_raised_in_the_caller_as_they_are() -> None:
    def fail() -> None:
        raise KeyError("missing")

    with pytest.raises(KeyError, match="missing"):
        await call_in_thread(fail)
    with pytest.raises(KeyboardInterrupt):
        await call_in_thread(_interrupt)
    assert await call_in_thread(lambda: 7) == 7  # the pool serves on after both


def _interrupt() -> None:
    raise KeyboardInterrupt


async def test_concurrent_calls_each_get_a_thread() -> None:
    barrier = threading.Barrier(6, timeout=10)  # six calls that can only finish together: none may wait for another
    idents: list[int] = []

    async def meet() -> None:
        idents.append(await call_in_thread(lambda: (barrier.wait(), threading.get_ident())[1]))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for _ in range(6):
                tg.start_soon(meet)
    assert len(set(idents)) == 6


async def test_an_abandoned_call_blocks_no_other_and_its_thread_serves_again() -> None:
    release = threading.Event()

    def stuck() -> int:
        release.wait(10)
        return threading.get_ident()

    stuck_on: list[int] = []

    def note_thread() -> int:
        stuck_on.append(threading.get_ident())
        return stuck()

    with anyio.move_on_after(0.2) as scope:
        await call_in_thread(note_thread)
    assert scope.cancelled_caught
    assert await call_in_thread(_thread_id) != stuck_on[0]  # served by another thread meanwhile
    release.set()
    served: set[int] = set()
    with anyio.fail_after(10):
        while stuck_on[0] not in served:  # the abandoned call's thread finishes it, then takes calls again
            await anyio.sleep(0.01)
            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(_note_served, served)


async def _note_served(served: set[int]) -> None:
    served.add(await call_in_thread(lambda: (time.sleep(0.01), threading.get_ident())[1]))


async def test_an_idle_pool_shrinks() -> None:
    pool = WorkerPool(idle_exit_s=0.05)
    threads: list[threading.Thread] = []

    async def note() -> None:
        threads.append(await pool.call(lambda: (time.sleep(0.05), threading.current_thread())[1]))

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(note)
    assert len(set(threads)) == 3
    for thread in threads:
        thread.join(timeout=5)
    assert not any(thread.is_alive() for thread in threads)
    assert await pool.call(lambda: 5) == 5  # an emptied pool starts a thread again


def test_a_forked_child_calls_on_a_pool_of_its_own() -> None:
    anyio.run(call_in_thread, _thread_id)  # the parent has a pool thread, which the child does not inherit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12+: fork() of a process with threads
        pid = os.fork()
    if pid == 0:
        os._exit(0 if anyio.run(_child_answer) == 42 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


async def _child_answer() -> int:
    with anyio.fail_after(5):  # with the parent's pool, the call would wait for a thread that is not there
        return await call_in_thread(lambda: 42)


async def test_calls_that_return_while_the_loop_is_busy_wake_it_with_one_callback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token = anyio.lowlevel.current_token()
    scheduled: list[object] = []
    schedule = token.backend_class.run_sync_soon

    def counted(func: Any, args: tuple[Any, ...], native_token: object = None) -> None:
        scheduled.append(func)
        schedule(func, args, native_token)

    monkeypatch.setattr(token.backend_class, "run_sync_soon", counted)
    wakeups = _Wakeups(token)
    returned = [anyio.Event() for _ in range(5)]
    posting = [threading.Thread(target=wakeups.post, args=(done,)) for done in returned]
    for thread in posting:
        thread.start()
    for thread in posting:  # the loop's thread waits here: every call returns while the loop is busy
        thread.join(timeout=10)
    with anyio.fail_after(5):
        for done in returned:
            await done.wait()
    assert len(scheduled) == 1
    again = anyio.Event()  # the callback took every waiter: the next return schedules one of its own
    await anyio.to_thread.run_sync(wakeups.post, again)
    with anyio.fail_after(5):
        await again.wait()
    assert len(scheduled) == 2


def test_a_call_that_returns_after_its_loop_ended_wakes_nothing_and_holds_no_loop() -> None:
    async def made() -> tuple[_Wakeups, anyio.Event, weakref.ref[object]]:
        token = anyio.lowlevel.current_token()
        return _Wakeups(token), anyio.Event(), weakref.ref(token.native_token)

    wakeups, done, loop = anyio.run(made)
    gc.collect()
    assert loop() is None  # the loop's entry in the pool's wake-ups does not keep it alive
    late = threading.Thread(target=wakeups.post, args=(done,))
    late.start()
    late.join(timeout=10)
    assert not late.is_alive()
    assert anyio.run(call_in_thread, lambda: 7) == 7  # a new loop gets wake-ups of its own


async def test_a_call_reaches_its_idle_thread_once_the_loop_has_done_the_rest_of_its_turn() -> None:
    pool = WorkerPool()
    await pool.call(_thread_id)  # leaves one thread idle, kept for the next call
    started: list[float] = []
    blocked: list[float] = []

    def work() -> None:
        started.append(time.monotonic())

    async def block() -> None:
        time.sleep(0.3)  # the same turn of the loop, after the call was made; lets go of the interpreter
        blocked.append(time.monotonic())

    async with anyio.create_task_group() as tg:
        tg.start_soon(pool.call, work)
        tg.start_soon(block)
    # handed over at once, the idle thread would have run `work` while the loop slept
    assert started[0] >= blocked[0]


async def test_calls_made_in_one_turn_each_get_a_thread_and_all_return() -> None:
    pool = WorkerPool()
    barrier = threading.Barrier(4, timeout=10)  # each call waits for the others: four threads at once, or none

    def meet() -> int:
        barrier.wait()
        return threading.get_ident()

    async def one(idents: list[int]) -> None:
        idents.append(await pool.call(meet))

    for _ in range(2):  # the second round's calls go to the idle threads the first left, handed over together
        idents: list[int] = []
        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(one, idents)
        assert len(set(idents)) == 4


async def test_a_call_given_up_before_its_hand_over_still_runs_once_and_gives_its_thread_back() -> None:
    pool = WorkerPool()
    first = await pool.call(_thread_id)
    ran: list[int] = []
    with anyio.move_on_after(0):  # the waiter gives up in the turn the call was made, before it is handed over
        await pool.call(lambda: ran.append(threading.get_ident()))
    deadline = time.monotonic() + 10
    while not ran and time.monotonic() < deadline:
        await anyio.sleep(0.01)
    await anyio.sleep(0.1)  # the thread marks itself idle after the call returns
    assert ran == [first]  # abandoned, as a timed-out call is: it still runs, on the thread kept for it
    assert await pool.call(_thread_id) == first  # which is idle again, not lost to the pool
