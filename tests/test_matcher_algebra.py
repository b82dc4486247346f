"""all_of / any_of / not_, the text and value matchers, tool()/event() steps, and predicates that raise."""

from __future__ import annotations

import re
from typing import Any

import anyio
import pytest

from niceeval import EvalContext, UsageError, define_eval
from niceeval._core.assertion import AssertionResult, Inconclusive, Matcher
from niceeval._core.results import RunResult
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.agents import FunctionSession, function_agent
from niceeval.expect import (
    all_of,
    any_of,
    ends_with,
    equals,
    event,
    has_sections,
    in_order,
    includes,
    includes_all,
    includes_any,
    includes_url,
    is_at_least,
    is_at_most,
    is_close_to,
    is_false,
    is_greater_than,
    is_less_than,
    is_not_none,
    is_true,
    json_includes,
    levenshtein,
    make_assertion,
    not_,
    satisfies,
    similarity,
    starts_with,
    tool,
)


def score(matcher: Matcher, value: Any) -> AssertionResult:
    try:
        raw = matcher.score_fn(value)
        if hasattr(raw, "__await__"):

            async def wait() -> Any:
                return await raw

            raw = anyio.run(wait)
    except Exception as exc:
        return matcher.crashed(exc, None)
    return matcher.result(raw, None)


def run(spec: EvalSpec, agent: Any = None) -> RunResult:
    entry = EvalEntry(id=f"tests/test_matcher_algebra.py::{spec.name}", spec=spec)
    return anyio.run(execute, entry, 0, ExecOptions(timeout=5, agent=agent))


# --- combinators -----------------------------------------------------------------------------------------------


def test_all_of_passes_when_every_child_passes_and_scores_the_lowest() -> None:
    result = score(all_of(includes("refund"), similarity("your refund").at_least(0.3)), "your refund is here")
    assert result.state == "passed"
    assert result.score is not None and 0.3 < result.score < 1.0  # the similarity's score, not 1.0


def test_all_of_miss_shows_the_tree_with_each_childs_verdict() -> None:
    result = score(all_of(includes("refund"), not_(includes("sorry"))), "sorry, no refund")
    assert (result.state, result.score) == ("failed", 0.0)
    assert result.name == "all_of(includes('refund'), not_(includes('sorry')))"
    assert result.reason.splitlines()[:3] == [
        "1 of 2 missed",
        "✓ includes('refund') (1.00)",
        "✗ not_(includes('sorry')) (0.00)",
    ]
    assert "includes('sorry') passed" in result.reason
    assert result.actual == "'sorry, no refund'"


def test_any_of_passes_on_one_child_and_scores_the_highest() -> None:
    hit = score(any_of(includes("refund"), includes("return")), "a return label")
    assert (hit.state, hit.score) == ("passed", 1.0)
    miss = score(any_of(includes("refund"), includes("return")), "no luck")
    assert (miss.state, miss.score) == ("failed", 0.0)
    assert "no matcher passed" in miss.reason


def test_not_scores_one_minus_the_child() -> None:
    result = score(not_(similarity("abcd")), "abcx")
    assert result.state == "passed"  # similarity 0.75 missed its 0.8 threshold, so not_ passes
    assert result.score == pytest.approx(0.25)
    passed = score(not_(includes("x")), "abc")
    assert (passed.state, passed.score) == ("passed", 1.0)


def test_not_of_a_soft_child_that_passes_is_a_miss() -> None:
    result = score(not_(similarity("abcd").at_least(0.7)), "abcx")
    assert result.state == "failed"


def test_at_least_on_a_combinator_cuts_its_score() -> None:
    matcher = all_of(includes("a"), similarity("abcd").at_least(0.5)).at_least(0.7)
    result = score(matcher, "abcx")
    assert (result.severity, result.state, result.score) == ("soft", "passed", 0.75)


def test_a_crashing_child_fails_not_and_any_of_loudly() -> None:
    boom = satisfies(lambda v: v.missing_attribute, "has the attribute")
    result = score(not_(boom), "text")
    assert result.state == "failed"
    assert "AttributeError" in result.reason and "test_matcher_algebra.py:" in result.reason
    assert score(any_of(includes("t"), boom), "text").state == "failed"


def test_an_inconclusive_child_leaves_the_combinator_inconclusive() -> None:
    def undecided(value: Any) -> bool:
        raise Inconclusive("no_api_key", "no key")

    maybe = make_assertion(name="maybe", score=undecided)
    assert score(all_of(includes("a"), maybe), "a").state == "inconclusive"
    assert score(all_of(includes("b"), maybe), "a").state == "failed"  # a miss decides it anyway
    assert score(any_of(includes("a"), maybe), "a").state == "passed"
    assert score(not_(maybe), "a").state == "inconclusive"


def test_async_children_are_awaited() -> None:
    async def slow(value: Any) -> bool:
        await anyio.sleep(0)
        return "ok" in value

    result = score(all_of(make_assertion(name="slow", score=slow), includes("o")), "ok")
    assert result.state == "passed"


def test_a_combinator_given_a_non_matcher_names_the_line() -> None:
    with pytest.raises(UsageError, match=r"all_of\(\) at tests/test_matcher_algebra.py:\d+: argument 2 is 'refund'"):
        all_of(includes("a"), "refund")  # type: ignore[arg-type]


def test_combinators_record_through_t_check() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        t.check("Kind regards", all_of(includes("regards", case_sensitive=False), not_(includes("sorry"))))

    (result,) = run(ev).assertions
    assert result.state == "passed" and result.location is not None


# --- text matchers ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("matcher", "value"),
    [
        (includes("REFUND", case_sensitive=False), "your refund"),
        (includes(re.compile("REF"), case_sensitive=False), "a refund"),
        (includes_any(["refund", "return"]), "a return label"),
        (includes_all(["refund", "order"]), "refund for order 1"),
        (includes_all(["REFUND"], case_sensitive=False), "Refund"),
        (starts_with("Hello"), "Hello there"),
        (ends_with("Support"), "Kind regards, Support"),
        (includes_url(), "see https://example.com/a."),
        (includes_url("https://example.com/a/"), "see https://example.com/a."),
        (includes_url(re.compile(r"example\.com")), "at http://example.com"),
        (has_sections(["Summary", "next steps"]), "# Summary\ntext\n\n## Next Steps ##\n- a"),
        (levenshtein("colour", max_distance=1), "color"),
    ],
)
def test_text_matchers_pass(matcher: Matcher, value: str) -> None:
    assert score(matcher, value).state == "passed"


@pytest.mark.parametrize(
    ("matcher", "value", "reason"),
    [
        (includes("REFUND"), "your refund", "'REFUND' not found"),
        (includes_any(["refund", "return"]), "nothing", "none of ['refund', 'return'] found"),
        (includes_all(["refund", "order"]), "a refund", "missing: ['order']"),
        (starts_with("Hello"), "Hi there", "starts with 'Hi there'"),
        (ends_with("Support"), "Kind regards", "ends with 'Kind regards'"),
        (includes_url(), "no link here", "no URL in the text"),
        (includes_url("https://b.org"), "see https://a.org", "URLs seen: ['https://a.org']"),
        (has_sections(["Summary", "Risks"]), "# Summary\n", "missing sections: ['Risks']; headings seen: ['Summary']"),
        (levenshtein("colour", max_distance=1), "colors", "2 edits > 1"),
    ],
)
def test_text_matchers_miss_with_the_actual_text(matcher: Matcher, value: str, reason: str) -> None:
    result = score(matcher, value)
    assert result.state == "failed"
    assert result.reason == reason
    assert result.actual == repr(value)


def test_includes_all_scores_the_share_found_and_still_misses() -> None:
    result = score(includes_all(["a", "b", "c", "d"]), "a b c")
    assert (result.state, result.score) == ("failed", 0.75)
    assert score(includes_all(["a", "b", "c", "d"]).at_least(0.7), "a b c").state == "passed"


def test_text_matchers_say_when_the_value_is_not_text() -> None:
    result = score(starts_with("a"), 42)
    assert (result.state, result.reason, result.actual) == ("failed", "expected a string, got int", "42")


# --- value matchers --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("matcher", "good", "bad", "reason"),
    [
        (is_at_least(3), 3, 2, "2 is not >= 3"),
        (is_at_most(0.5), 0.5, 0.6, "0.6 is not <= 0.5"),
        (is_greater_than(0), 1, 0, "0 is not > 0"),
        (is_less_than(10), 9.5, 10, "10 is not < 10"),
        (is_close_to(0.3, 1e-9), 0.1 + 0.2, 0.31, "0.31 is 0.01 away from 0.3 (tolerance 1e-09)"),
        (is_true(), True, 1, "expected True, got int 1"),
        (is_false(), False, "", "expected False, got str ''"),
        (is_not_none(), 0, None, "the value is None"),
        (in_order(["greet", "answer"]), ["greet", "x", "answer"], ["answer", "greet"], "'answer' not found in order"),
        (in_order(["Hello", "bye"]), "Hello ... bye", "bye ... Hello", "'bye' not found after 'Hello'"),
    ],
)
def test_value_matchers_pass_and_miss_with_the_actual_value(matcher: Matcher, good: Any, bad: Any, reason: str) -> None:
    assert score(matcher, good).state == "passed"
    miss = score(matcher, bad)
    assert (miss.state, miss.reason) == ("failed", reason)
    assert miss.actual is not None


def test_comparisons_refuse_a_bound_that_is_not_a_number() -> None:
    with pytest.raises(UsageError, match=r"is_at_least\(\) compares numbers"):
        is_at_least("3")  # type: ignore[arg-type]


def test_json_includes_is_a_deep_partial_match_in_the_tool_input_language() -> None:
    partial = {"user": {"id": re.compile(r"^usr_"), "age": lambda a: a >= 18}, "tags": ["a", {"k": 1}]}
    value = {"user": {"id": "usr_1", "age": 30, "name": "Ada"}, "tags": ["a", {"k": 1, "x": 2}], "extra": True}
    assert score(json_includes(partial), value).state == "passed"
    assert score(json_includes({"user": {"id": "usr_1"}}), '{"user": {"id": "usr_1"}}').state == "passed"
    miss = score(json_includes(partial), {"user": {"id": "u2", "age": 12}, "tags": ["a"]})
    assert miss.state == "failed"
    assert miss.reason.splitlines() == [
        "$.user.id: 'u2' does not match /^usr_/",
        "$.user.age: 12 fails the predicate",
        "$.tags: expected 2 items, got 1: ['a']",
    ]


# --- satisfies and predicates that raise -----------------------------------------------------------------------


def test_satisfies_miss_shows_the_actual_value() -> None:
    result = score(satisfies(lambda d: d["total"] > 0, "total is positive"), {"total": -5})
    assert result.state == "failed"
    assert result.reason == "total is positive: false for {'total': -5}"
    assert result.actual == "{'total': -5}"


@function_agent
def shell_agent(message: str, session: FunctionSession) -> str:
    session.tool("shell", {"command": "npm install"})
    return "installed"


def test_a_typo_in_a_not_called_tool_predicate_fails_naming_its_line() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("install")
        t.not_called_tool("shell", input=lambda i: i["comand"].startswith("rm"))  # typo: comand

    result = run(ev, shell_agent)
    (miss,) = result.assertions
    assert result.outcome == "failed" and miss.state == "failed"
    assert "KeyError: 'comand'" in miss.reason
    assert re.search(r"at tests/test_matcher_algebra\.py:\d+", miss.reason)


def test_a_predicate_inside_an_input_dict_that_raises_fails_called_tool_too() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("install")
        t.called_tool("shell", input={"command": lambda c: c.startwith("npm")})  # typo: startwith

    (miss,) = run(ev, shell_agent).assertions
    assert miss.state == "failed" and "AttributeError" in miss.reason


# --- tool() and event() steps ----------------------------------------------------------------------------------


@function_agent
def files_agent(message: str, session: FunctionSession) -> str:
    session.tool("read_file", {"path": "b.txt"})
    session.tool("read_file", {"path": "a.txt"})
    session.tool("write_file", {"path": "a.txt"}, status="failed")
    return "done"


def test_tool_order_and_event_order_accept_patterns() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("edit")
        t.tool_order([tool("read_file", input={"path": "a.txt"}), tool("write_file", status="failed")])
        t.tool_order([tool("write_file"), tool("read_file", input={"path": "b.txt"})]).label("write before read b")
        t.event_order(
            [event("message", data={"role": "user"}), "action.called", event("message", data={"role": "assistant"})]
        )

    result = run(ev, files_agent)
    states = {a.name: a.state for a in result.assertions}
    assert states == {
        "tool_order(read_file (input containing {'path': 'a.txt'}) -> write_file (status failed))": "passed",
        "write before read b": "failed",
        "event_order(message (input containing {'role': 'user'}) -> action.called -> "
        "message (input containing {'role': 'assistant'}))": "passed",
    }


def test_bad_steps_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="unknown event type"):
        event("tool.called")
    with pytest.raises(UsageError, match="status= is 'success' or 'failed'"):
        tool("x", status="ok")


def test_equals_still_lists_differences() -> None:
    assert score(equals({"a": 1}), {"a": 2}).reason == "$.a: expected 1, got 2"
