"""The shape of `t.judge`: arguments, resolution order, chaining, awaiting, concurrency and wrong usage."""

from __future__ import annotations

import ast
import re
import time
from pathlib import Path

import anyio
import pytest
from judge_helpers import ANTHROPIC, OPENAI, RUBRIC_PASS, Run, always
from pydantic import BaseModel

import niceeval.judge
from niceeval._core.errors import UsageError
from niceeval.judge import Judge

PACKAGE = Path(niceeval.judge.__file__).parent


class Order(BaseModel):
    order_id: str


def test_the_judge_package_does_not_import_the_runner_or_the_eval_context() -> None:
    for path in PACKAGE.glob("*.py"):
        tree = ast.parse(path.read_text())
        type_only = {
            id(node)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
            for node in ast.walk(block)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and id(node) not in type_only:
                assert not (node.module or "").startswith(("niceeval._eval", "niceeval._run")), path.name


def test_the_model_resolution_order(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    run.settings = {"model": OPENAI}
    results = run(lambda t: [t.rubric("a"), t.rubric("b", model=ANTHROPIC)])
    assert [r.judge_calls[0].model for r in results] == [OPENAI, ANTHROPIC]
    run.grader = "openai/gpt-5-mini"
    results = run(lambda t: [t.rubric("a"), t.rubric("b", model=ANTHROPIC)])
    assert [r.judge_calls[0].model for r in results] == ["openai/gpt-5-mini", "openai/gpt-5-mini"]


def test_a_multi_line_rubric_is_named_on_one_line_and_sent_whole(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    rubric = """Polite.
        Names the order number.

    Promises a date."""
    results = run(lambda t: [t.rubric(rubric), t.g_eval(rubric), t.vote([rubric, "short"], models=[OPENAI])])
    assert [r.name for r in results] == [
        "rubric('Polite. Names the order number. Promises a date.')",
        "g_eval('Polite. Names the order number. Promises a date.')",
        "vote(['Polite. Names the order number. Promises a date.', 'short'], 2 of 2)",
    ]
    assert "Names the order number.\n\n    Promises a date." in results[0].judge_calls[0].messages[-1]["content"]


def test_on_defaults_to_the_reply_when_the_call_is_made(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))

    def body(t: Judge) -> None:
        run.reply = "first reply"
        t.rubric("a")
        run.reply = "second reply"

    (result,) = run(body)
    assert result.actual == "first reply" and "first reply" in run.server.requests[0].last_user_text


@pytest.mark.parametrize(
    ("value", "sent"),
    [
        ({"b": [1, 2], "a": None}, '{\n  "b": [\n    1,\n    2\n  ],\n  "a": null\n}'),
        (Order(order_id="1234"), '{\n  "order_id": "1234"\n}'),
        ([{1, 2}, Path("x")], '[\n  [\n    1,\n    2\n  ],\n  "x"\n]'),
        (None, "null"),
        (b"bytes", "bytes"),
        (object, "\"<class 'object'>\""),
    ],
)
def test_on_any_value_is_sent_as_json(run: Run, value: object, sent: str) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    (result,) = run(lambda t: t.rubric("a", on=value))
    assert f">\n{sent}\n</output-" in run.server.requests[0].last_user_text
    assert result.state == "passed"


def test_chaining_changes_the_recorded_result(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    (result,) = run(lambda t: t.rubric("a").at_least(0.95).gate().label("polite enough").optional())
    assert (result.name, result.severity, result.threshold, result.state, result.optional) == (
        "polite enough",
        "gate",
        0.95,
        "failed",
        True,
    )


def test_chaining_after_the_verdict_settles_still_applies(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))

    async def body(t: Judge) -> None:
        handle = t.rubric("a")
        early = await handle
        handle.at_least(0.95)
        assert early.state == "passed"

    (result,) = run(body)
    assert (result.state, result.threshold) == ("failed", 0.95)


def test_await_gives_the_verdict_early_and_result_raises_while_running(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    run.server.latency = 0.1

    async def body(t: Judge) -> None:
        handle = t.rubric("a")
        with pytest.raises(UsageError, match="still running; `await` it"):
            handle.result  # noqa: B018
        assert not handle.done
        verdict = await handle
        assert handle.done and verdict == handle.result and verdict.score == 0.9

    run(body)


def test_judge_calls_run_concurrently(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    run.server.latency = 0.3
    started = time.monotonic()
    results = run(lambda t: [t.rubric(f"criteria {i}") for i in range(8)])
    assert len(results) == 8 and all(r.state == "passed" for r in results)
    assert time.monotonic() - started < 1.5  # 8 x 0.3 s one after the other would be 2.4 s


def test_a_verdict_the_run_did_not_wait_for_is_a_timeout(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    run.server.latency = 5

    async def body(t: Judge) -> None:
        t.rubric("a")
        await anyio.sleep(0.05)
        raise TimeoutError  # as when the runner's timeout ends the run

    with pytest.raises(TimeoutError):
        run(body)
    (result,) = run.results
    assert (result.state, result.cause) == ("inconclusive", "timeout")
    assert "before the judge answered" in result.reason


def test_a_crash_inside_the_judge_is_a_failed_result(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    from niceeval.judge import _judge

    async def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("boom")

    monkeypatch.setattr(_judge, "decide", broken)
    (result,) = run(lambda t: t.rubric("a"))
    assert (result.state, result.cause, result.reason) == ("failed", "error", "the judge raised RuntimeError: boom")


@pytest.mark.parametrize("threshold", [-0.1, 1.5, True, "0.7", float("nan")])
def test_a_threshold_outside_0_1_is_rejected(run: Run, threshold: object) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    with pytest.raises(UsageError, match="needs a threshold between 0 and 1"):
        run(lambda t: t.rubric("a").at_least(threshold))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda t: t.rubric(""), r"t.judge.rubric\(\) needs non-empty criteria"),
        (lambda t: t.g_eval("   "), r"t.judge.g_eval\(\) needs non-empty criteria"),
        (lambda t: t.autoevals.closed_qa(None), "closed_qa\\(\\) needs non-empty criteria"),
        (lambda t: t.autoevals.factuality(""), "factuality\\(\\) needs the expected answer"),
        (lambda t: t.summarizes(""), "summarizes\\(\\) needs the source document"),
        (lambda t: t.autoevals.summary(""), "summary\\(\\) needs the reference summary"),
        (lambda t: t.vote([]), "needs criteria"),
        (lambda t: t.vote(["a", ""]), "needs non-empty criteria"),
        (lambda t: t.vote("a", need=2), r"need=...\) must be a whole number from 1 to 1"),
        (lambda t: t.vote("a", models=[]), "non-empty list of model strings"),
        (lambda t: t.vote("a", models=[OPENAI], model=OPENAI), "not both"),
        (lambda t: t.rubric("a").label(""), "needs a non-empty string"),
    ],
)
def test_wrong_arguments_are_usage_errors(run: Run, call: object, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        run(call)  # type: ignore[arg-type]
    assert run.server.requests == []


def test_an_unknown_family_is_a_clear_error(run: Run) -> None:
    with pytest.raises(AttributeError, match="t.judge has no judge 'llm_rubric'; the judges are: rubric, g_eval"):
        run(lambda t: t.llm_rubric("a"))  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="t.judge.autoevals has no judge 'closedQA'"):
        run(lambda t: t.autoevals.closedQA("a"))  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("group", "message"),
    [
        (
            "rag",
            "t.judge.rag has no judge 'nope'; the judges are: faithfulness, answer_relevance, context_relevance, "
            "context_recall.",
        ),
        (
            "conversation",
            "t.judge.conversation has no judge 'nope'; the judges are: goal_completion, role_adherence, "
            "knowledge_retention.",
        ),
        ("openai", "t.judge.openai has no judge 'nope'; the judges are: rubric, g_eval, vote, "),
        ("autoevals", "t.judge.autoevals has no judge 'nope'; the judges are: rubric, g_eval, vote, "),
    ],
)
def test_each_judge_group_lists_its_judges_for_a_misspelt_one(run: Run, group: str, message: str) -> None:
    with pytest.raises(AttributeError, match=f"^{re.escape(message)}"):
        run(lambda t: getattr(t, group).nope)


def test_autoevals_summarizes_points_at_both_summary_graders(run: Run) -> None:
    with pytest.raises(AttributeError, match=r"^t\.judge\.autoevals has no 'summarizes': niceeval's faithfulness"):
        run(lambda t: t.autoevals.summarizes)  # type: ignore[attr-defined]


def test_an_unknown_provider_is_a_clear_error(run: Run) -> None:
    with pytest.raises(UsageError, match=r"t.judge.rubric\(\): unknown provider 'gemini'.*known providers: openai"):
        run(lambda t: t.rubric("a", model="gemini/pro"))
    run.settings = {"model": OPENAI, "fallback": "claude-haiku"}
    with pytest.raises(UsageError, match="judge fallback: model 'claude-haiku' needs a provider prefix"):
        run(lambda t: t.rubric("a"))


def test_no_judge_model_anywhere_says_where_to_set_one(run: Run) -> None:
    run.settings = {}
    with pytest.raises(UsageError, match="no judge model. Set judge=.*--grader MODEL"):
        run(lambda t: t.rubric("a"))


def test_location_is_the_callers_line(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    (result,) = run(lambda t: t.rubric("a"))
    assert result.location is not None and result.location.startswith("tests/judge/test_judge_api.py:")


def test_a_judge_request_is_posted_as_built_without_the_sdks_parameter_transform(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    import openai.resources.chat.completions.completions as sdk

    def transform(*args: object, **kwargs: object) -> None:
        raise AssertionError("the judge's request went through the SDK's parameter transform (0.45 ms of CPU)")

    monkeypatch.setattr(sdk, "async_maybe_transform", transform)
    run.server.set_script(always(RUBRIC_PASS))
    (result,) = run(lambda t: t.rubric("Polite."))
    assert (result.score, result.state) == (0.9, "passed")
    (request,) = run.server.requests
    assert request.body["response_format"]["json_schema"]["name"] == "verdict"
    assert request.headers["authorization"] == "Bearer test"
