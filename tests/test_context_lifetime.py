"""A finished run is freed by reference counting: no part of `t` refers back to it, so nothing of the run waits in a
reference cycle for the garbage collector (which a busy suite rarely runs in full)."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest

from niceeval import EvalContext, EvalSpec, JudgeSettings, RunResult, SyncEvalContext, define_eval
from niceeval._eval.cases import Case
from niceeval._eval.context import ContextBase
from niceeval._eval.conversation import Conversation, Turn
from niceeval._eval.sessions import Sessions
from niceeval._eval.variants import Variant
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.expect import includes, satisfies
from niceeval.judge._judge import Judge, JudgeSession
from niceeval.testing import LLMServer, Reply

RUBRIC_PASS = {"reason": "polite", "pass": True, "score": 0.9}


def echo(message: str) -> str:
    return "echo: " + message


def run(spec: EvalSpec) -> RunResult:
    """One run of `spec`, once a sync eval's thread (which holds `t` until it ends) has ended too."""
    entry = EvalEntry(
        id=f"evals/x.py::{spec.name}[c1][tone=kind]",
        spec=spec,
        case=Case(id="c1", data={"question": "hello", "assert": [{"type": "icontains", "value": "ECHO"}]}),
        variant=Variant({"tone": "kind"}, {"tone": "kind"}),
    )
    options = ExecOptions(timeout=30, agent=echo, judge=JudgeSettings(model="openai/judge"))
    result = anyio.run(execute, entry, 0, options)
    for thread in threading.enumerate():
        if thread.name == "niceeval-sync-call":
            thread.join(timeout=5)
    return result


@pytest.fixture
def server(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    llm_server.set_script(lambda request: Reply(data=RUBRIC_PASS))
    return llm_server


@pytest.fixture
def collector_off() -> Iterator[None]:
    """Only reference counting frees what the run makes while the test looks."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def _positive(value: int) -> bool:
    return value > 0


def _watch(t: ContextBase, seen: list[weakref.ref[Any]]) -> None:
    assert t.variant["tone"] == "kind"
    seen.extend(weakref.ref(o) for o in (t, t.judge, t.judge._session))


def _every_part_async(seen: list[weakref.ref[Any]]) -> Callable[[EvalContext], Any]:
    async def every_part(t: EvalContext) -> None:
        turn = await t.send(t.case["question"])
        turn.check(includes("echo"))
        turn.judge.rubric("Is it polite?")
        t.session.succeeded()
        second = t.new_session()
        await t.send("again")
        second.max_tool_calls(0)
        await t.check(1, satisfies(_positive, "positive"))
        with t.group("reply"):
            t.check(t.reply, includes("again"))
        t.check_case()
        t.max_score()
        t.no_error_spans()
        t.called_tool("search", count=0)
        _watch(t, seen)

    return every_part


def _every_part_sync(seen: list[weakref.ref[Any]]) -> Callable[[SyncEvalContext], Any]:
    def every_part(t: SyncEvalContext) -> None:
        turn = t.send(t.case["question"])
        turn.check(includes("echo"))
        turn.judge.rubric("Is it polite?")
        t.session.succeeded()
        second = t.new_session()
        t.send("again")
        second.max_tool_calls(0)
        t.check(1, satisfies(_positive, "positive"))
        with t.group("reply"):
            t.check(t.reply, includes("again"))
        t.check_case()
        t.max_score()
        t.no_error_spans()
        t.called_tool("search", count=0)
        _watch(t, seen)

    return every_part


def _left_behind() -> list[str]:
    kinds = ContextBase | Judge | JudgeSession | Sessions | Conversation | Turn
    return [type(o).__name__ for o in gc.get_objects() if isinstance(o, kinds)]


@pytest.mark.parametrize("kind", ["async", "sync"])
@pytest.mark.usefixtures("collector_off")
def test_a_run_that_uses_every_part_of_the_context_is_freed_by_reference_counting(server: LLMServer, kind: str) -> None:
    seen: list[weakref.ref[Any]] = []
    fn = _every_part_async(seen) if kind == "async" else _every_part_sync(seen)
    result = run(define_eval(name=f"every_part_{kind}")(fn))
    assert result.error is None, result.error
    assert [a.state for a in result.assertions if a.state != "passed"] == []
    assert sorted(a.name for a in result.assertions) == [
        "called_tool('search')",
        "icontains('ECHO')",
        "no_error_spans",
        "positive",
        "reply › includes('again')",
        "session 1: succeeded",
        "session 2: max_tool_calls(0)",
        "turn 1: includes('echo')",
        "turn 1: rubric('Is it polite?')",
    ]
    assert [type(ref()).__name__ for ref in seen if ref() is not None] == []
    assert _left_behind() == []


@pytest.mark.parametrize("kind", ["async", "sync"])
@pytest.mark.usefixtures("collector_off")
def test_a_run_stopped_by_a_failed_require_is_freed_by_reference_counting(server: LLMServer, kind: str) -> None:
    seen: list[weakref.ref[Any]] = []

    async def stopped_async(t: EvalContext) -> None:
        await t.send("hello")
        seen.append(weakref.ref(t))
        t.require(t.reply, includes("nowhere"))

    def stopped_sync(t: SyncEvalContext) -> None:
        t.send("hello")
        seen.append(weakref.ref(t))
        t.require(t.reply, includes("nowhere"))

    result = run(define_eval(name=f"stopped_{kind}")(stopped_async if kind == "async" else stopped_sync))
    assert result.outcome == "failed" and result.error is None
    assert [a.name for a in result.assertions] == ["includes('nowhere')"]
    assert [ref() for ref in seen] == [None]
    assert _left_behind() == []
