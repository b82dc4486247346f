"""The eval context `t` inside a real run: check vs require, skip, async matchers, errors, timeouts, agents."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from niceeval import EvalContext, SyncEvalContext, UsageError, define_eval
from niceeval._core.results import RunResult
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.expect import includes, make_assertion, satisfies, similarity


def run(spec: EvalSpec, *, agent: Any = None, timeout: float = 5.0) -> RunResult:
    entry = EvalEntry(id=f"tests/test_context.py::{spec.name}", spec=spec)
    return anyio.run(execute, entry, 0, ExecOptions(timeout=timeout, agent=agent))


def echo(message: str) -> str:
    return f"echo: {message}"


def test_check_records_and_continues_after_a_miss() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        t.check("abc", includes("x"))
        t.check("abc", includes("a"))

    result = run(ev)
    assert [a.state for a in result.assertions] == ["failed", "passed"]
    assert result.outcome == "failed"


def test_check_records_the_callers_file_and_line() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        t.check("abc", includes("x"))

    line = ev.line + 2
    assert run(ev).assertions[0].location == f"tests/test_context.py:{line}"


def test_require_stops_the_eval_on_a_miss() -> None:
    reached = []

    @define_eval
    async def ev(t: EvalContext) -> None:
        t.require("abc", includes("x"))
        reached.append(True)

    result = run(ev)
    assert reached == []
    assert result.outcome == "failed"
    assert result.error is None  # a failed precondition is an assertion, not a crash


def test_require_on_a_soft_matcher_still_fails_the_eval() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        t.require("abc", similarity("xyz").at_least(0.9))

    result = run(ev)
    assert result.outcome == "failed"
    assert result.assertions[0].severity == "gate"


def test_require_cannot_be_swallowed_by_except_exception() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        try:
            t.require("abc", includes("x"))
        except Exception:
            t.check("after", includes("after"))

    assert [a.name for a in run(ev).assertions] == ["includes('x')"]


def test_skip_marks_the_run_skipped_with_its_reason() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        t.check("a", similarity("zzz"))
        t.skip("not ready")

    result = run(ev)
    assert (result.outcome, result.skip_reason) == ("skipped", "not ready")


def test_an_exception_fails_the_run_with_the_users_line() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        t.check("a", includes("a"))
        raise ValueError("boom")

    result = run(ev)
    assert result.outcome == "failed"
    assert result.error is not None
    assert (result.error.type, result.error.message) == ("ValueError", "boom")
    assert result.error.location == f"tests/test_context.py:{ev.line + 3}"
    assert len(result.assertions) == 1  # what was computed before the crash is kept


def test_a_timeout_fails_the_run_and_keeps_earlier_assertions() -> None:
    @define_eval(timeout=0.2)
    async def ev(t: EvalContext) -> None:
        t.check("a", includes("a"))
        await anyio.sleep(10)

    result = run(ev)
    assert result.error is not None and result.error.kind == "timeout"
    assert "0.2 s timeout" in result.error.message
    assert [a.state for a in result.assertions] == ["passed"]


def test_a_crashing_matcher_is_a_recorded_miss_not_a_crash() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        t.check(None, satisfies(lambda v: v.total > 0, "total positive"))
        t.check("a", includes("a"))

    result = run(ev)
    assert result.error is None
    assert result.assertions[0].state == "failed"
    assert "AttributeError" in result.assertions[0].reason
    assert result.assertions[1].state == "passed"


def test_check_without_a_matcher_is_an_author_error_naming_the_line() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        t.check("value")

    result = run(ev)
    assert result.error is not None and result.error.kind == "usage"
    assert f"t.check() at tests/test_context.py:{ev.line + 2} was given no matcher" in result.error.message


async def _slow_positive(value: int) -> bool:
    await anyio.sleep(0.01)
    return value > 0


def test_async_matchers_settle_before_folding() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        t.check(-1, satisfies(_slow_positive, "positive"))

    result = run(ev)
    assert [a.state for a in result.assertions] == ["failed"]
    assert result.outcome == "failed"


def test_awaiting_a_check_gives_its_result_early() -> None:
    seen = []

    @define_eval
    async def ev(t: EvalContext) -> None:
        result = await t.check(1, satisfies(_slow_positive, "positive"))
        seen.append(result.state)

    run(ev)
    assert seen == ["passed"]


def test_an_async_require_must_be_awaited() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        t.require(-1, satisfies(_slow_positive, "positive"))

    result = run(ev)
    assert result.error is not None and result.error.kind == "usage"
    assert "write `await t.require(...)`" in result.error.message


def test_an_awaited_async_require_stops_the_eval() -> None:
    reached = []

    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.require(-1, satisfies(_slow_positive, "positive"))
        reached.append(True)

    assert run(ev).outcome == "failed"
    assert reached == []


def test_an_async_matcher_returning_a_bad_score_is_an_author_error() -> None:
    async def bad(value: object) -> float:
        return 3.0

    @define_eval
    async def ev(t: EvalContext) -> None:
        t.check(1, make_assertion(name="bad", score=bad))

    result = run(ev)
    assert result.error is not None and result.error.kind == "usage"


def test_send_talks_to_the_configured_function_agent() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        turn = await t.send("hi")
        t.check(turn.message, includes("echo: hi"))
        t.check(t.reply, includes("echo: hi"))

    result = run(ev, agent=echo)
    assert result.outcome == "passed"
    assert [(e.type, getattr(e, "role", None)) for e in result.events] == [
        ("message", "user"),
        ("message", "assistant"),
    ]


def test_the_evals_own_agent_wins_over_the_config() -> None:
    @define_eval(agent=lambda m: "from the eval")
    async def ev(t: EvalContext) -> None:
        await t.send("hi")
        t.check(t.reply, includes("from the eval"))

    assert run(ev, agent=echo).outcome == "passed"


def test_send_without_an_agent_says_how_to_configure_one() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("hi")

    result = run(ev)
    assert result.error is not None and "set `agent=` in niceeval.config.py" in result.error.message


def test_structured_replies_become_turn_data() -> None:
    @define_eval(agent=lambda m: {"intent": "refund"})
    async def ev(t: EvalContext) -> None:
        turn = await t.send("hi")
        t.check(turn.data, satisfies(lambda d: d["intent"] == "refund", "intent is refund"))

    assert run(ev).outcome == "passed"


def test_a_sync_eval_gets_a_synchronous_send() -> None:
    @define_eval
    def ev(t: SyncEvalContext) -> None:
        turn = t.send("hi")
        t.check(turn.message, includes("echo"))
        t.check(1, satisfies(_slow_positive, "async matchers resolve in sync evals"))

    result = run(ev, agent=echo)
    assert result.outcome == "passed"
    assert len(result.assertions) == 2


def test_an_async_agent_works() -> None:
    async def agent(message: str) -> str:
        await anyio.sleep(0)
        return "async " + message

    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("hi")
        t.check(t.reply, includes("async hi"))

    assert run(ev, agent=agent).outcome == "passed"


def test_an_agent_raising_fails_the_run_and_names_the_agent_line() -> None:
    def broken(message: str) -> str:
        raise RuntimeError("agent down")

    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("hi")

    result = run(ev, agent=broken)
    assert result.error is not None and result.error.message == "agent down"


def test_a_sync_eval_that_hangs_is_abandoned_at_the_timeout() -> None:
    @define_eval(timeout=0.2)
    def ev(t: SyncEvalContext) -> None:
        time.sleep(0.6)

    started = time.perf_counter()
    result = run(ev)
    assert result.error is not None and result.error.kind == "timeout"
    assert time.perf_counter() - started < 0.55


def test_an_eval_with_two_required_arguments_is_rejected_with_its_line() -> None:
    def two(t: object, other: object) -> None: ...

    with pytest.raises(UsageError, match=r"must take exactly one argument, the eval context"):
        define_eval(two)


def test_define_eval_rejects_unknown_options() -> None:
    with pytest.raises(
        UsageError, match=r"test_context.py:\d+: define_eval\(\) has no option .tag.; did you mean .tags"
    ):
        define_eval(tag=["x"])  # type: ignore[call-overload]


def test_define_eval_rejects_a_non_positive_timeout() -> None:
    with pytest.raises(UsageError, match="timeout"):
        define_eval(timeout=0)


@pytest.mark.parametrize("verb", ["check", "require"])
def test_check_without_arguments_says_what_to_write_naming_no_internal_class(verb: str) -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        getattr(t, verb)()

    result = run(ev)
    assert result.error is not None and result.error.type == "UsageError"
    assert result.error.message == (
        f"t.{verb}() needs the value to score and a matcher, e.g. t.{verb}(t.reply, includes('refund'))."
    )
    assert "ContextBase" not in result.error.message


def test_define_eval_given_a_name_positionally_points_to_name() -> None:
    with pytest.raises(UsageError, match=r"@define_eval\('my name'\) takes .* write @define_eval\(name='my name'\)"):
        define_eval("my name")  # type: ignore[call-overload]
