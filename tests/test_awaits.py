"""A forgotten `await` on niceeval's API fails the eval as an author error naming the line and saying "add await"."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from test_sandbox_evals import run

from niceeval import EvalContext, define_eval
from niceeval._core.results import RunResult
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.agents import FunctionSession
from niceeval.expect import equals, includes


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "fixtures" / "app").mkdir(parents=True)
    (tmp_path / "fixtures" / "app" / "app.py").write_text("VALUE = 1\n")
    return tmp_path


def plain_run(spec: EvalSpec, agent: object = None) -> RunResult:
    options = ExecOptions(timeout=30, agent=agent or (lambda m: "echo: " + m))
    return anyio.run(execute, EvalEntry(id=f"x.py::{spec.name}", spec=spec), 0, options)


def assert_add_await(result: RunResult, what: str, line: int) -> None:
    assert result.outcome == "failed"
    assert result.error is not None and result.error.kind == "usage", result.error
    assert what in result.error.message and "add await" in result.error.message
    assert (result.error.location or "").endswith(f"test_awaits.py:{line}")


def test_checking_an_unawaited_sandbox_call_is_an_author_error(root: Path) -> None:
    @define_eval(fixture="fixtures/app", agent=lambda m: "ok")
    async def ev(t: EvalContext) -> None:
        t.check(t.sandbox.exists("app.py"), equals(True))

    result = run(ev, root)
    assert result.assertions == []  # nothing scored a coroutine object
    assert_add_await(result, "t.check()", ev.line + 2)
    assert "was given the coroutine LocalSandbox.exists(...)" in (result.error.message if result.error else "")


def test_requiring_an_awaitable_is_an_author_error() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        t.require(t.send("hi"), includes("hi"))

    assert_add_await(plain_run(ev), "t.require()", ev.line + 2)


def test_an_unawaited_sandbox_write_fails_the_eval(root: Path) -> None:
    @define_eval(fixture="fixtures/app", agent=lambda m: "ok")
    async def ev(t: EvalContext) -> None:
        t.sandbox.write_text("app.py", "VALUE = 2\n")
        t.check(await t.sandbox.read_text("app.py"), includes("VALUE"))

    result = run(ev, root)
    assert_add_await(result, "t.sandbox.write_text(...)", ev.line + 2)


def test_an_unawaited_send_fails_the_eval_and_names_what_followed() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        t.send("hi")
        t.require(t.reply, includes("hi"))

    result = plain_run(ev)
    assert_add_await(result, "t.send(...)", ev.line + 2)
    assert result.error is not None and "The eval then ended with" not in result.error.message  # require is no error


def test_reading_the_reply_after_an_unawaited_send_stops_there_with_no_spurious_miss() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        t.send("hi")
        t.check(t.reply, includes("echo"))

    result = plain_run(ev)
    assert_add_await(result, "t.send(...)", ev.line + 2)
    assert result.assertions == []  # no `includes('echo')` miss of the reply before the send
    assert result.error is not None and result.error.message.count("never awaited") == 1


def test_the_error_after_a_missing_await_is_kept_in_the_message() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        t.send("hi")
        raise ValueError("reply was empty")

    result = plain_run(ev)
    assert_add_await(result, "t.send(...)", ev.line + 2)
    assert result.error is not None and "then ended with ValueError: reply was empty" in result.error.message


def test_awaited_calls_pass_untouched(root: Path) -> None:
    @define_eval(fixture="fixtures/app", agent=lambda m: "ok")
    async def ev(t: EvalContext) -> None:
        await t.send("hi")
        await t.sandbox.write_text("b.py", "B = 1\n")
        t.check(await t.sandbox.exists("b.py"), equals(True))

    result = run(ev, root)
    assert (result.outcome, result.error) == ("passed", None)


async def lookup(order_id: str) -> str:
    return f"order {order_id} shipped"


async def awaits_its_tool(message: str, session: FunctionSession) -> str:
    return str(await session.call_tool("lookup", lookup, order_id="12"))


async def forgets_its_tool(message: str, session: FunctionSession) -> str:
    session.call_tool("lookup", lookup, order_id="12")
    return "done"


def test_an_async_tool_through_call_tool_is_recorded_with_its_output() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("where is 12?")
        t.called_tool("lookup", input={"order_id": "12"})

    result = plain_run(ev, awaits_its_tool)
    assert result.outcome == "passed", result.error
    tool = next(e for e in result.events if e.type == "action.called")
    assert tool.output == "order 12 shipped"  # type: ignore[union-attr]


def test_an_unawaited_async_tool_in_an_agent_fails_the_run() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("where is 12?")

    result = plain_run(ev, forgets_its_tool)
    assert result.error is not None and result.error.kind == "usage"
    assert "session.call_tool('lookup', ...)" in result.error.message and "add await" in result.error.message
    assert (result.error.location or "").endswith(f"test_awaits.py:{forgets_its_tool.__code__.co_firstlineno + 1}")
