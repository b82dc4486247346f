"""Scoped assertions over the whole event stream, the tool matching language, usage and cost, HITL, revival."""

from __future__ import annotations

import re
from typing import Any

import anyio
import pytest

from niceeval import EvalContext, UsageError, define_eval
from niceeval._core.results import RunResult
from niceeval._core.settings import Price
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.agents import FunctionSession, function_agent
from niceeval.providers._pricing import cost_of, find_price


def run(spec: EvalSpec, agent: Any, *, pricing: dict[str, Price] | None = None) -> RunResult:
    entry = EvalEntry(id=f"tests/test_scoped.py::{spec.name}", spec=spec)
    return anyio.run(execute, entry, 0, ExecOptions(timeout=5, agent=agent, pricing=pricing or {}))


def support(message: str, session: FunctionSession) -> str:
    session.tool("lookup_order", {"order_id": "1234", "verbose": True}, output={"status": "shipped"})
    session.tool("read_file", {"path": "a.txt"})
    session.tool("write_file", {"path": "a.txt"})
    session.tool("send_email", {"to": "x@example.com"}, status="failed", error="smtp down")
    session.subagent("researcher", remote_url="https://api.example.com/agents/r")
    session.usage("openai/gpt-4o-mini", input_tokens=1_000_000, output_tokens=100_000)
    return "Order 1234 has shipped."


def states(result: RunResult) -> dict[str, str]:
    return {a.name: a.state for a in result.assertions}


def test_called_tool_with_a_partial_input_dict_passes() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("where is 1234")
        t.called_tool("lookup_order", input={"order_id": "1234"}, count=1)
        t.called_tool("lookup_order", input={"order_id": "9999"}).at_least(1.0).label("another order")

    result = run(ev, support)
    assert states(result) == {"called_tool('lookup_order')": "passed", "another order": "failed"}
    assert result.outcome == "scored"  # the soft miss counts: the recorded states are real


def test_called_tool_input_values_may_be_regexes_and_predicates() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        t.called_tool("lookup_order", input={"order_id": re.compile(r"^\d+$"), "verbose": lambda v: v is True})
        t.called_tool("lookup_order", input=re.compile(r'"order_id":"12'))
        t.called_tool("lookup_order", input=lambda i: i["order_id"].startswith("1"))
        t.called_tool("lookup_order", input={"order_id": re.compile(r"^9")}).at_least(1.0).label("regex miss")
        t.called_tool("lookup_order", input=lambda i: i["verbose"] is False).at_least(1.0).label("predicate miss")

    result = run(ev, support)
    assert [a.state for a in result.assertions] == ["passed", "passed", "passed", "failed", "failed"]
    assert result.outcome == "scored"


def test_called_tool_regex_sees_compact_json_in_the_agents_key_order() -> None:
    def agent(message: str, session: FunctionSession) -> str:
        session.tool("bash", {"command": "pwd", "cwd": "/tmp/café"})
        return "done"

    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        t.called_tool("bash", input=re.compile(r'^\{"command":"pwd","cwd":"/tmp/café"\}$')).label("compact")
        t.called_tool("bash", input=re.compile(r'"command": "pwd"')).label("spaced")

    assert states(run(ev, agent)) == {"compact": "passed", "spaced": "failed"}


def test_called_tool_miss_lists_the_calls_seen_in_order() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        t.called_tool("lookup_order", input={"order_id": "9999"})

    result = run(ev, support)
    miss = result.assertions[0]
    assert result.outcome == "failed" and miss.state == "failed"
    assert "1. lookup_order(" in miss.reason and "4. send_email(" in miss.reason
    assert miss.actual == "0 matching calls"
    assert miss.location == f"tests/test_scoped.py:{ev.line + 3}"


def test_called_tool_count_is_exact_and_at_least_is_a_floor() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        await t.send("y")
        t.called_tool("read_file", count=2).label("twice")
        t.called_tool("read_file", count=1).label("once")
        t.called_tool("read_file", at_least=1).label("at least once")

    assert states(run(ev, support)) == {"twice": "passed", "once": "failed", "at least once": "passed"}


def test_called_tool_status_filters_before_counting() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        t.called_tool("send_email", status="failed").label("failed email")
        t.called_tool("send_email", status="success").label("sent email")

    assert states(run(ev, support)) == {"failed email": "passed", "sent email": "failed"}


def test_not_called_tool_and_used_no_tools() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        t.not_called_tool("delete_order").label("no delete")
        t.not_called_tool("lookup_order", input={"order_id": "1234"}).label("no lookup")
        t.used_no_tools().label("no tools")

    assert states(run(ev, support)) == {"no delete": "passed", "no lookup": "failed", "no tools": "failed"}


def test_tool_order_checks_relative_order() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        t.tool_order(["read_file", "write_file"]).label("read then write")
        t.tool_order(["write_file", "read_file"]).label("write then read")

    assert states(run(ev, support)) == {"read then write": "passed", "write then read": "failed"}


def test_max_tool_calls_and_no_failed_actions() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        t.max_tool_calls(4).label("at most 4")
        t.max_tool_calls(3).label("at most 3")
        t.no_failed_actions()

    result = run(ev, support)
    assert states(result) == {"at most 4": "passed", "at most 3": "failed", "no_failed_actions": "failed"}
    assert "send_email: smtp down" in result.assertions[2].reason
    assert result.assertions[1].actual == "4 calls"


def test_max_tool_calls_says_one_call_in_the_singular() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        t.max_tool_calls(0)

    (only,) = run(ev, lambda message, session: session.tool("lookup", {}) or "ok").assertions
    assert (only.state, only.actual) == ("failed", "1 call")


def test_called_subagent_matches_name_and_url() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        t.called_subagent("researcher", remote_url=re.compile(r"api\.example")).label("by regex")
        t.called_subagent("researcher", remote_url="https://elsewhere").label("wrong url")

    assert states(run(ev, support)) == {"by regex": "passed", "wrong url": "failed"}


def test_loaded_skill_accepts_skill_actions_and_load_skill_calls() -> None:
    def agent(message: str, session: FunctionSession) -> str:
        session.tool("load_skill", {"skill": "memory-v2"})
        session.tool("pdf", kind="skill")
        return "ok"

    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        t.loaded_skill("memory-v2").label("via load_skill")
        t.loaded_skill("pdf").label("via skill action")
        t.loaded_skill("other").label("missing")

    assert states(run(ev, agent)) == {"via load_skill": "passed", "via skill action": "passed", "missing": "failed"}


def _index(events: list[Any], name: str) -> int:
    return [getattr(e, "name", "") for e in events].index(name)


def test_event_primitives() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        t.event("action.called", data={"name": "read_file"}, count=1).label("one read")
        t.not_event("error").label("no errors")
        t.not_event("usage").label("no usage")
        t.event_order(["action.called", "subagent.called"]).label("action then subagent")
        t.events_satisfy("read before write", lambda es: _index(es, "read_file") < _index(es, "write_file"))
        t.message_includes(re.compile(r"Order \d+")).label("mentions order")

    assert states(run(ev, support)) == {
        "one read": "passed",
        "no errors": "passed",
        "no usage": "failed",
        "action then subagent": "passed",
        "read before write": "passed",
        "mentions order": "passed",
    }


def test_scoped_assertions_see_events_after_they_were_registered() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        t.called_tool("lookup_order")  # registered before the agent ran
        t.called_tool("refund").at_least(1.0).label("never called")
        await t.send("x")

    assert states(run(ev, support)) == {"called_tool('lookup_order')": "passed", "never called": "failed"}


def test_scoped_handles_chain_severity() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        t.used_no_tools().at_least(0.5)

    assert run(ev, support).outcome == "scored"


def test_a_bad_input_spec_is_rejected_where_written() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        t.called_tool("x", input=42)  # type: ignore[arg-type]

    result = run(ev, support)
    assert result.error is not None and "input= takes a dict" in result.error.message


def test_unknown_event_type_is_rejected() -> None:
    with pytest.raises(UsageError, match="unknown event type 'messages'"):
        from niceeval._eval.scoped import event

        event("messages")  # type: ignore[arg-type]


def test_usage_sums_tokens_and_prices_from_the_table() -> None:
    seen = []

    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        seen.append(t.usage)

    run(ev, support)
    usage = seen[0]
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (1_000_000, 100_000, 1_100_000)
    assert usage.cost == pytest.approx(0.15 + 0.06)


def test_max_tokens_scores_limit_over_actual_beyond_the_limit() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        t.max_tokens(2_000_000).label("within")
        t.max_tokens(550_000).label("double")

    result = run(ev, support)
    scores = {a.name: (a.score, a.severity, a.state) for a in result.assertions}
    assert scores["within"] == (1.0, "gate", "passed")
    assert scores["double"] == (0.5, "gate", "failed")


def test_max_tokens_downgraded_to_soft_makes_the_eval_scored() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        t.max_tokens(550_000).at_least(0.7)

    assert run(ev, support).outcome == "scored"


def test_max_cost_uses_config_pricing_overrides() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        t.max_cost(1.0)

    pricey = {"openai/*": Price(input_per_mtok=10, output_per_mtok=10)}
    result = run(ev, support, pricing=pricey)
    assert result.assertions[0].score == pytest.approx(1.0 / 11.0)


def test_max_cost_without_a_price_is_inconclusive_with_a_fix() -> None:
    def agent(message: str, session: FunctionSession) -> str:
        session.usage("acme/unknown-model", input_tokens=10, output_tokens=10)
        return "ok"

    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        t.max_cost(0.01)

    result = run(ev, agent)
    miss = result.assertions[0]
    assert (miss.state, miss.score, miss.cause) == ("inconclusive", None, "no_price")
    assert "acme/unknown-model" in miss.reason and "pricing=" in miss.reason
    assert result.outcome == "passed"


def test_dated_snapshots_find_their_model_price() -> None:
    assert find_price("openai/gpt-4o-mini-2024-07-18") == find_price("openai/gpt-4o-mini")
    assert find_price("acme/x") is None


def test_cache_reads_are_billed_at_the_cache_price() -> None:
    price = Price(input_per_mtok=1.0, output_per_mtok=2.0, cache_read_per_mtok=0.1)
    assert cost_of(price, input_tokens=1_000_000, output_tokens=0, cache_read_tokens=1_000_000) == pytest.approx(1.1)


def hitl(message: str, session: FunctionSession) -> str:
    if message.startswith("approve"):
        session.tool("refund", {"amount": 30})
        return "Refund issued."
    session.request_input("Approve a refund of $30?")
    return "I need approval first."


def test_an_input_request_parks_the_turn_and_respond_continues() -> None:
    statuses = []

    @define_eval
    async def ev(t: EvalContext) -> None:
        turn = await t.send("refund me")
        statuses.append(turn.status)
        turn = await t.respond("approve: yes")
        statuses.append(turn.status)
        t.succeeded()
        t.called_tool("refund")

    result = run(ev, hitl)
    assert statuses == ["waiting", "completed"]
    assert result.outcome == "passed"


def test_parked_asserts_the_run_ended_waiting() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("refund me")
        t.parked()
        t.succeeded()

    assert states(run(ev, hitl)) == {"parked": "passed", "succeeded": "failed"}


def test_respond_when_nothing_waits_is_an_author_error() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("approve now")
        await t.respond("yes")

    result = run(ev, hitl)
    assert result.error is not None and "the last turn is not waiting" in result.error.message


def memory(message: str, session: FunctionSession) -> str:
    return f"message {len(session.history) // 2 + 1} of {session.id}"


def test_sends_continue_one_session_and_revive_keeps_its_history() -> None:
    replies = []

    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("a")
        await t.send("b")
        before = t.session_id
        await t.revive()
        await t.send("c")
        replies.append((t.reply, before == t.session_id))

    run(ev, function_agent(memory))
    assert replies[0][0].startswith("message 3 of") and replies[0][1]


def test_new_session_starts_a_separate_conversation() -> None:
    replies = []

    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("a")
        first = t.session_id
        t.new_session()
        await t.send("b")
        replies.append((t.reply.startswith("message 1 of"), first != t.session_id))

    run(ev, memory)
    assert replies == [(True, True)]


def test_structured_output_that_does_not_validate_fails_the_turn_visibly() -> None:
    from pydantic import BaseModel

    class Intent(BaseModel):
        intent: str

    turns = []

    @define_eval
    async def ev(t: EvalContext) -> None:
        turns.append(await t.send("x", output=Intent))
        t.not_event("error")

    result = run(ev, lambda m: '{"wrong": 1}')
    assert turns[0].status == "failed" and turns[0].data is None
    assert result.outcome == "failed"


def test_structured_output_that_validates_becomes_the_model() -> None:
    from pydantic import BaseModel

    class Intent(BaseModel):
        intent: str

    turns = []

    @define_eval
    async def ev(t: EvalContext) -> None:
        turns.append(await t.send("x", output=Intent))

    run(ev, lambda m: '{"intent": "refund"}')
    assert turns[0].data == Intent(intent="refund")


def test_a_failing_tool_is_reported_and_the_agent_goes_on() -> None:
    def broken_tool(order_id: str) -> str:
        raise ConnectionError("db down")

    def agent(message: str, session: FunctionSession) -> str:
        answer = session.call_tool("lookup_order", broken_tool, order_id="1")
        return f"sorry: {answer}"

    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        t.called_tool("lookup_order", status="failed")
        t.called_tool("lookup_order", status="success").at_least(1.0).label("succeeded")

    result = run(ev, agent)
    assert states(result) == {"called_tool('lookup_order')": "passed", "succeeded": "failed"}
    assert result.outcome == "scored"
    assert "ConnectionError: db down" in result.events[-1].text  # type: ignore[union-attr]


def test_scoped_assertions_are_kept_when_the_eval_crashes() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        t.called_tool("lookup_order")
        await t.send("x")
        raise RuntimeError("after the agent answered")

    result = run(ev, support)
    assert result.outcome == "failed" and result.error is not None
    assert [(a.name, a.state) for a in result.assertions] == [("called_tool('lookup_order')", "passed")]


def test_turn_output_equals_and_output_matches_record_checks_at_the_callers_line() -> None:
    from pydantic import BaseModel

    class Intent(BaseModel):
        intent: str

    @define_eval(agent=lambda m: {"intent": "refund"})
    async def ev(t: EvalContext) -> None:
        turn = await t.send("x")
        turn.output_equals({"intent": "refund"})
        turn.output_matches(Intent)
        turn.output_equals({"intent": "ship"})

    result = run(ev, None)
    assert [(a.name, a.state) for a in result.assertions] == [
        ("output_equals", "passed"),
        ("output_matches", "passed"),
        ("output_equals", "failed"),
    ]
    assert result.assertions[2].location == f"tests/test_scoped.py:{ev.line + 5}"
    assert "$.intent: expected 'ship', got 'refund'" in result.assertions[2].reason


def test_turn_usage_counts_only_that_turns_model_calls() -> None:
    turns = []

    def agent(message: str, session: FunctionSession) -> str:
        session.usage("openai/gpt-4o-mini", input_tokens=100 if message == "a" else 7, output_tokens=1)
        return "ok"

    @define_eval
    async def ev(t: EvalContext) -> None:
        turns.append(await t.send("a"))
        turns.append(await t.send("b"))

    run(ev, agent)
    assert [turn.usage.total_tokens for turn in turns] == [101, 8]


def test_an_agent_raising_mid_turn_leaves_an_error_event_and_fails_the_run() -> None:
    def broken(message: str) -> str:
        raise ConnectionError("backend down")

    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")

    result = run(ev, broken)
    assert result.outcome == "failed" and result.error is not None and result.error.type == "ConnectionError"
    errors = [e for e in result.events if e.type == "error"]
    assert len(errors) == 1 and "backend down" in errors[0].message  # type: ignore[union-attr]
