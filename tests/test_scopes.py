"""Turn and session scopes: every scoped assertion over only its scope's events, named by it in reports."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from niceeval import EvalContext, SyncEvalContext, define_eval
from niceeval._core.results import RunResult
from niceeval._core.settings import JudgeSettings
from niceeval._eval.conversation import Turn
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.agents import FunctionSession, function_agent
from niceeval.expect import includes


def run(spec: EvalSpec, agent: Any) -> RunResult:
    entry = EvalEntry(id=f"tests/test_scopes.py::{spec.name}", spec=spec)
    return anyio.run(execute, entry, 0, ExecOptions(timeout=5, agent=agent))


def by_name(result: RunResult) -> dict[str, str]:
    return {a.name: a.state for a in result.assertions}


@function_agent
def travel(message: str, session: FunctionSession) -> str:
    """Searches flights in the first turn and books in the second."""
    if "book" in message:
        session.call_tool("book_flight", lambda flight: "booked", flight="LH123")
        session.usage("openai/gpt-5-mini", input_tokens=900, output_tokens=40)
        return "Booked LH123."
    session.call_tool("search_flights", lambda to: ["LH123"], to="Paris")
    session.usage("openai/gpt-5-mini", input_tokens=100, output_tokens=10)
    return "I found LH123 to Paris."


def two_turns(first_tool: str, second_tool: str) -> EvalSpec:
    @define_eval
    async def trip(t: EvalContext) -> None:
        first = await t.send("flights to Paris?")
        second = await t.send("book it")
        first.called_tool(first_tool)
        first.not_called_tool(second_tool)
        second.called_tool(second_tool)
        second.not_called_tool(first_tool)

    return trip


def test_multi_turn_eval_passes_only_when_each_turn_sees_its_own_tools() -> None:
    right = run(two_turns("search_flights", "book_flight"), travel)
    assert right.outcome == "passed", right.assertions
    assert by_name(right) == {
        "turn 1: called_tool('search_flights')": "passed",
        "turn 1: not_called_tool('book_flight')": "passed",
        "turn 2: called_tool('book_flight')": "passed",
        "turn 2: not_called_tool('search_flights')": "passed",
    }
    swapped = run(two_turns("book_flight", "search_flights"), travel)
    assert swapped.outcome == "failed"
    assert [a.state for a in swapped.assertions] == ["failed", "failed", "failed", "failed"]


def test_a_turn_miss_lists_only_that_turns_calls() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("flights?")
        second = await t.send("book it")
        second.called_tool("search_flights")

    (miss,) = run(ev, travel).assertions
    assert miss.name == "turn 2: called_tool('search_flights')"
    assert "book_flight" in miss.reason and "search_flights(" not in miss.reason


def test_every_scoped_assertion_works_on_a_turn() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        turn = await t.send("book it")
        turn.tool_order(["book_flight"])
        turn.max_tool_calls(1)
        turn.no_failed_actions()
        turn.event("action.called", count=1)
        turn.not_event("error")
        turn.event_order(["message", "action.called"])
        turn.succeeded()
        turn.max_tokens(1_000)
        turn.max_cost(1.0)
        turn.check(includes("Booked"))
        turn.require(turn.message, includes("LH123"))

    result = run(ev, travel)
    assert result.outcome == "passed", [(a.name, a.reason) for a in result.assertions if a.missed]
    assert all(a.name.startswith("turn 1: ") for a in result.assertions)
    assert len(result.assertions) == 11


def test_max_tokens_differs_between_turns() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        first = await t.send("flights?")
        second = await t.send("book it")
        first.max_tokens(200)  # the first turn spent 110 tokens, the second 940
        second.max_tokens(200)
        t.max_tokens(2_000)

    assert by_name(run(ev, travel)) == {
        "turn 1: max_tokens(200)": "passed",
        "turn 2: max_tokens(200)": "failed",
        "max_tokens(2,000)": "passed",
    }


def test_session_scope_covers_only_its_own_turns() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("flights?")
        first = t.session
        second = t.new_session()
        await t.send("book it")
        first.called_tool("search_flights")
        first.not_called_tool("book_flight")
        second.called_tool("book_flight", count=1)
        second.not_called_tool("search_flights")
        t.session.check(includes("Booked"))
        assert [c.name for c in first.tool_calls] == ["search_flights"]
        assert [c.name for c in second.tool_calls] == ["book_flight"]

    result = run(ev, travel)
    assert result.outcome == "passed", [(a.name, a.reason) for a in result.assertions if a.missed]
    assert sorted(by_name(result)) == [
        "session 1: called_tool('search_flights')",
        "session 1: not_called_tool('book_flight')",
        "session 2: called_tool('book_flight')",
        "session 2: includes('Booked')",
        "session 2: not_called_tool('search_flights')",
    ]


def test_turns_of_a_second_session_name_it() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        t.new_session()
        turn = await t.send("book it")
        turn.called_tool("book_flight")

    assert by_name(run(ev, travel)) == {"session 2 turn 1: called_tool('book_flight')": "passed"}


def test_tool_calls_are_typed_with_input_output_status_and_duration() -> None:
    seen: dict[str, Any] = {}

    @define_eval
    async def ev(t: EvalContext) -> None:
        turn = await t.send("book it")
        seen["turn"] = turn.tool_calls
        seen["run"] = t.tool_calls

    run(ev, travel)
    (call,) = seen["turn"]
    assert (call.name, call.input, call.output, call.status) == (
        "book_flight",
        {"flight": "LH123"},
        "booked",
        "success",
    )
    assert call.duration is not None and call.duration >= 0
    assert seen["run"] == seen["turn"]


def test_a_turn_from_another_eval_is_a_clear_error_naming_the_line() -> None:
    kept: list[Turn] = []

    @define_eval
    async def first(t: EvalContext) -> None:
        kept.append(await t.send("book it"))

    @define_eval
    async def second(t: EvalContext) -> None:
        kept[0].called_tool("book_flight")

    run(first, travel)
    result = run(second, travel)
    assert result.outcome == "failed" and result.error is not None
    assert result.error.kind == "usage"
    assert "belongs to another eval (tests/test_scopes.py::first)" in result.error.message
    assert result.error.location is not None and result.error.location.startswith("tests/test_scopes.py:")


def test_turn_scopes_work_in_sync_evals_and_chain_like_matchers() -> None:
    @define_eval
    def ev(t: SyncEvalContext) -> None:
        turn = t.send("book it")
        turn.max_tool_calls(0).at_least(0.5)

    (result,) = run(ev, travel).assertions
    assert (result.name, result.severity, result.state) == ("turn 1: max_tool_calls(0)", "soft", "failed")


def test_a_turn_judge_without_an_api_key_is_inconclusive_and_named_by_the_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    @define_eval
    async def ev(t: EvalContext) -> None:
        turn = await t.send("book it")
        turn.judge.autoevals.closed_qa("Did it book the flight?")

    entry = EvalEntry(id="tests/test_scopes.py::ev", spec=ev)
    options = ExecOptions(timeout=5, agent=travel, judge=JudgeSettings(model="openai/judge"))
    (verdict,) = anyio.run(execute, entry, 0, options).assertions
    assert verdict.name == "turn 1: closed_qa('Did it book the flight?')"
    assert verdict.state == "inconclusive" and verdict.score is None


def test_a_turn_check_without_a_matcher_teaches_the_form() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        turn = await t.send("book it")
        turn.check("Booked")

    result = run(ev, travel)
    assert result.error is not None and "takes a matcher" in result.error.message


@pytest.mark.parametrize("followups", [0])
def test_respond_starts_a_new_turn(followups: int) -> None:
    @function_agent
    def approver(message: str, session: FunctionSession) -> str:
        if message == "yes":
            session.tool("refund", {"amount": 5})
            return "done"
        session.request_input("approve?")
        return "waiting"

    @define_eval
    async def ev(t: EvalContext) -> None:
        asking = await t.send("refund please", followups=followups)
        answered = await t.respond("yes")
        asking.used_no_tools()
        answered.called_tool("refund")

    assert by_name(run(ev, approver)) == {
        "turn 1: used_no_tools": "passed",
        "turn 2: called_tool('refund')": "passed",
    }


def test_group_names_every_assertion_made_inside_it() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        with t.group("booking"):
            turn = await t.send("book it")
            t.check(turn.message, includes("Booked"))
            turn.called_tool("book_flight")
            with t.group("cost"):
                t.max_tokens(10_000)
        t.succeeded()

    assert by_name(run(ev, travel)) == {
        "booking › includes('Booked')": "passed",
        "booking › turn 1: called_tool('book_flight')": "passed",
        "booking › cost › max_tokens(10,000)": "passed",
        "succeeded": "passed",
    }


def test_respond_all_answers_until_the_agent_stops_asking() -> None:
    asked = [0]

    @function_agent
    def three_approvals(message: str, session: FunctionSession) -> str:
        if asked[0] < 3:
            asked[0] += 1
            session.request_input(f"approve step {asked[0]}?")
            return "waiting"
        session.tool("deploy", {})
        return "deployed"

    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("deploy")
        last = await t.respond_all("yes")
        t.check(last.status, includes("completed"))
        last.called_tool("deploy")

    result = run(ev, three_approvals)
    assert result.outcome == "passed", result.assertions
    assert by_name(result) == {"includes('completed')": "passed", "turn 4: called_tool('deploy')": "passed"}


def test_key_is_recorded_on_checks_scoped_assertions_and_misses() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        turn = await t.send("book it")
        t.check(turn.message, includes("Booked").key("booked"))
        turn.called_tool("search_flights").key("searched")

    result = run(ev, travel)
    assert {a.name: (a.key, a.state) for a in result.assertions} == {
        "includes('Booked')": ("booked", "passed"),
        "turn 1: called_tool('search_flights')": ("searched", "failed"),
    }


def test_key_needs_a_name() -> None:
    with pytest.raises(Exception, match=r"key\(\) needs a non-empty string"):
        includes("x").key("  ")
