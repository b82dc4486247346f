"""A plain `def` eval reaches the event loop through a portal on its run's task group (`TaskPortal`): each call is a
task of the run, so the run's deadline cancels it, a call outlived by its run is refused, and the loop's own thread
may not call (it would wait for itself)."""

from __future__ import annotations

import concurrent.futures
import threading
import time
from typing import Any

import anyio
import pytest

from niceeval import EvalContext, EvalSpec, RunResult, SyncEvalContext, define_eval
from niceeval._core.events import EventLog
from niceeval._core.threads import TaskPortal, call_in_thread
from niceeval._eval.cases import Case
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.agents import AgentReply
from niceeval.expect import includes, satisfies

pytestmark = pytest.mark.anyio


async def _doubled(value: int) -> tuple[int, int]:
    return value * 2, threading.get_ident()


async def test_a_call_runs_in_the_loop_and_returns_its_value() -> None:
    loop_thread = threading.get_ident()
    async with anyio.create_task_group() as tg:
        portal = TaskPortal(tg)
        doubled, ran_on = await call_in_thread(lambda: portal.call(_doubled, 21))
    assert (doubled, ran_on) == (42, loop_thread)


async def _refused(reason: str) -> None:
    raise LookupError(reason)


async def test_what_a_call_raises_is_raised_in_the_thread_as_it_is() -> None:
    async with anyio.create_task_group() as tg:
        portal = TaskPortal(tg)
        with pytest.raises(LookupError, match="no such order"):
            await call_in_thread(lambda: portal.call(_refused, "no such order"))


async def test_the_task_groups_deadline_cancels_a_call_in_flight() -> None:
    outcome: list[str] = []

    async def hangs() -> None:
        try:
            await anyio.sleep(10)
        finally:
            outcome.append("cancelled in the loop")

    def waits(portal: TaskPortal) -> None:
        try:
            portal.call(hangs)
        except concurrent.futures.CancelledError:
            outcome.append("cancelled in the thread")

    started = anyio.current_time()
    async with anyio.create_task_group() as tg:
        tg.cancel_scope.deadline = started + 0.2
        portal = TaskPortal(tg)
        tg.start_soon(call_in_thread, lambda: waits(portal))
    assert tg.cancel_scope.cancelled_caught
    assert anyio.current_time() - started < 5
    for _ in range(100):  # the thread learns of the cancellation after the loop did
        if len(outcome) == 2:
            break
        await anyio.sleep(0.01)
    assert outcome == ["cancelled in the loop", "cancelled in the thread"]


async def test_a_call_after_the_task_group_ended_is_refused() -> None:
    async with anyio.create_task_group() as tg:
        portal = TaskPortal(tg)
    with pytest.raises(RuntimeError, match="not active"):
        await call_in_thread(lambda: portal.call(_doubled, 1))


async def test_a_call_from_the_loops_own_thread_is_refused_instead_of_waiting_forever() -> None:
    async with anyio.create_task_group() as tg:
        portal = TaskPortal(tg)
        with pytest.raises(RuntimeError, match="from another thread"):
            portal.call(_doubled, 1)


def _run(spec: EvalSpec) -> RunResult:
    entry = EvalEntry(id="evals/x.py::ev[c1]", spec=spec, case=Case(id="c1", data={"answer": "answer 2"}))
    return anyio.run(execute, entry, 0, ExecOptions(timeout=30))


async def _never(value: object) -> bool:
    await anyio.sleep(10)
    return True


def test_a_sync_evals_async_check_waiting_past_the_timeout_fails_the_run_as_timed_out() -> None:
    @define_eval(timeout=0.3)
    def ev(t: SyncEvalContext) -> None:
        t.check(t.case["answer"], includes("answer"))
        t.check("x", satisfies(_never, "never settles"))

    started = time.perf_counter()
    result = _run(ev)
    assert time.perf_counter() - started < 5
    assert result.error is not None and result.error.kind == "timeout"
    assert "0.3 s timeout" in result.error.message
    assert result.assertions[0].state == "passed"  # what the eval recorded before it waited is kept


def test_a_sync_eval_that_only_checks_makes_none_of_the_conversation_parts() -> None:
    seen: list[set[str]] = []

    @define_eval
    def ev(t: SyncEvalContext) -> None:
        t.check(t.case["answer"], includes("answer"))
        seen.append(set(vars(t)))

    result = _run(ev)
    assert result.outcome == "passed"
    assert not {"_sessions", "_judge", "_scope", "_observed", "_comparisons", "_case_checks"} & seen[0]


class _Recording:
    """An agent whose sessions say when they open and close."""

    def __init__(self, *, slow: bool = False) -> None:
        self.seen: list[str] = []
        self._slow = slow

    async def open(self, session_id: str, log: EventLog) -> _RecordingSession:
        self.seen.append("open")
        return _RecordingSession(session_id, self)


class _RecordingSession:
    def __init__(self, session_id: str, agent: _Recording) -> None:
        self.id = session_id
        self._agent = agent

    async def send(self, message: str, *, output: type[Any] | None = None) -> AgentReply:
        if self._agent._slow:
            await anyio.sleep(10)
        return AgentReply(text="answer " + message)

    async def close(self) -> None:
        self._agent.seen.append("close")


def test_the_session_a_sync_evals_send_opened_is_closed_when_the_run_ends() -> None:
    agent = _Recording()

    @define_eval(agent=agent)
    def ev(t: SyncEvalContext) -> None:
        t.send("42")
        t.check(t.reply, includes("answer 42"))

    result = _run(ev)
    assert result.outcome == "passed"
    assert agent.seen == ["open", "close"]


def test_the_session_of_a_run_that_timed_out_mid_send_is_closed_too() -> None:
    agent = _Recording(slow=True)

    @define_eval(agent=agent, timeout=0.3)
    async def ev(t: EvalContext) -> None:
        await t.send("42")

    result = _run(ev)
    assert result.error is not None and result.error.kind == "timeout"
    assert agent.seen == ["open", "close"]


def test_a_run_that_never_sends_opens_no_session() -> None:
    agent = _Recording()

    @define_eval(agent=agent)
    def ev(t: SyncEvalContext) -> None:
        t.check(t.case["answer"], includes("answer"))

    assert _run(ev).outcome == "passed"
    assert agent.seen == []
