"""Span assertions on `t`: name/kind/attributes in the tool-input matching language, counts, durations, errors."""

from __future__ import annotations

import re
import time
from typing import Any

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from niceeval import EvalContext, define_eval
from niceeval._core.results import RunResult
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.agents import traced_agent

tracer = trace.get_tracer("tests.spans")


def support(message: str) -> str:
    with tracer.start_as_current_span("time_range_agent run", attributes={"gen_ai.operation.name": "invoke_agent"}):
        with tracer.start_as_current_span("chat gpt-5-mini") as chat:
            chat.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-5-mini"})
        with tracer.start_as_current_span("running tool: lookup_order") as tool:
            tool.set_attributes(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "lookup_order",
                    "gen_ai.tool.call.arguments": '{"order_id": "1234"}',
                    "app.region": "eu-west-1",
                }
            )
            time.sleep(0.02)
        if "fail" in message:
            with tracer.start_as_current_span("charge card") as charge:
                charge.set_status(Status(StatusCode.ERROR, "card declined"))
    return "Order 1234 has shipped."


AGENT = traced_agent(support, flush_window=0.5)


def run(spec: EvalSpec, agent: Any = AGENT) -> RunResult:
    entry = EvalEntry(id=f"tests/tracing/test_span_assertions.py::{spec.name}", spec=spec)
    return anyio.run(execute, entry, 0, ExecOptions(timeout=10, agent=agent, pricing={}))


def states(result: RunResult) -> dict[str, str]:
    return {a.name: a.state for a in result.assertions}


def test_span_by_kind_and_attributes_passes_whatever_the_display_name() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("where is 1234")
        t.span(kind="tool", attributes={"gen_ai.tool.name": "lookup_order"}, count=1)
        t.span(kind="agent")
        t.span(kind="model", attributes={"gen_ai.request.model": re.compile(r"^gpt-5")})
        t.span(re.compile(r"agent run$"), kind="internal")
        t.span(lambda name: name.startswith("running tool"), attributes={"app.region": lambda r: r.startswith("eu")})
        t.called_tool("lookup_order", input={"order_id": "1234"})

    result = run(ev)
    assert result.outcome == "passed", result.assertions
    assert len(result.assertions) == 6


def test_a_span_looked_up_by_an_old_display_name_fails_and_lists_what_was_seen() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        t.span("agent run")

    result = run(ev)
    (miss,) = result.assertions
    assert result.outcome == "failed" and miss.state == "failed"
    assert "time_range_agent run [agent]" in miss.reason and "running tool: lookup_order [tool]" in miss.reason
    assert miss.actual == "0 matching spans"
    assert miss.location is not None and "test_span_assertions.py" in miss.location


def test_count_and_max_duration() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        t.span(kind="tool", count=2).label("two tools")
        t.span(kind="tool", max_duration=0.001).label("fast tools")
        t.span(kind="tool", max_duration=5).label("tools within 5 s")

    result = run(ev)
    assert states(result) == {"two tools": "failed", "fast tools": "failed", "tools within 5 s": "passed"}
    slow = next(a for a in result.assertions if a.name == "fast tools")
    assert "over 0.001 s: running tool: lookup_order" in slow.reason


def test_no_span_and_no_error_spans() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("please fail")
        t.no_span(kind="tool", attributes={"gen_ai.tool.name": "refund"}).label("no refund")
        t.no_span("charge card").label("no charge")
        t.no_error_spans()

    result = run(ev)
    assert states(result) == {"no refund": "passed", "no charge": "failed", "no_error_spans": "failed"}
    errors = next(a for a in result.assertions if a.name == "no_error_spans")
    assert errors.reason == "error spans: charge card: card declined"


def test_t_spans_is_typed_with_parent_and_children() -> None:
    seen: list[Any] = []

    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        (top,) = [span for span in t.spans if span.parent is None]
        seen.append((top.name, [child.name for child in top.children], t.spans[1].parent is top))

    assert run(ev).outcome == "passed"
    assert seen == [("time_range_agent run", ["chat gpt-5-mini", "running tool: lookup_order"], True)]


def test_span_assertions_on_an_untraced_agent_say_so() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("x")
        t.span(kind="tool")

    result = run(ev, lambda message: "plain")
    (miss,) = result.assertions
    assert miss.state == "failed" and "the run has no spans (is the agent traced?" in miss.reason


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda t: t.span(kind="span"), "unknown kind='span'"),
        (lambda t: t.span(kind="tool", count=1, at_least=1), "give count= (exact) or at_least=, not both"),
        (lambda t: t.span(kind="tool", max_duration=-1), "max_duration= is seconds"),
        (lambda t: t.span(7), "name= is a string, a compiled regex or a function"),
        (lambda t: t.no_span(attributes=["x"]), "attributes= is a dict"),
    ],
)
def test_bad_arguments_are_usage_errors_at_their_line(call: Any, message: str) -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        call(t)

    result = run(ev)
    assert result.error is not None and result.error.kind == "usage" and message in result.error.message
