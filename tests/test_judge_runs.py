"""`t.judge` inside one run of the runner (`execute`), over real HTTP to the local LLM server.

What the command line adds (flags, the cache, reports) is covered in tests/e2e/test_judge_cli.py.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from niceeval import (
    ConfigError,
    EvalContext,
    EvalSpec,
    JudgeSettings,
    RunResult,
    SyncEvalContext,
    define_config,
    define_eval,
)
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute, judge_settings
from niceeval.providers import _limiter
from niceeval.testing import Fault, LLMServer, Reply

RUBRIC_PASS = {"reason": "polite and on topic", "pass": True, "score": 0.9}


def echo(message: str) -> str:
    return "echo: " + message


def run(spec: EvalSpec, **judge: Any) -> RunResult:
    entry = EvalEntry(id=f"evals/x.py::{spec.name}", spec=spec)
    options = ExecOptions(timeout=30, agent=echo, judge=JudgeSettings(**{"model": "openai/judge", **judge}))
    return anyio.run(execute, entry, 0, options)


@pytest.fixture(autouse=True)
def fresh_limiters(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own provider limiters (they belong to one event loop, and a 429 shrinks them)."""
    monkeypatch.setattr(_limiter, "_limiters", {})


@pytest.fixture
def server(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    """The local server answering every judge question with a passing rubric verdict, and keys to reach it."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    llm_server.set_script(lambda request: Reply(data=RUBRIC_PASS))
    return llm_server


def test_a_sync_eval_can_use_the_judge(server: LLMServer) -> None:
    @define_eval
    def polite(t: SyncEvalContext) -> None:
        t.send("hello")
        t.judge.rubric("Is the reply polite?")

    result = run(polite)
    assert (result.outcome, result.error) == ("passed", None)
    (assertion,) = result.assertions
    assert (assertion.state, assertion.score, assertion.actual) == ("passed", 0.9, "echo: hello")
    assert server.requests[0].last_user_text.count("echo: hello") == 1


def test_awaiting_a_judge_handle_gives_the_verdict_before_the_eval_ends(server: LLMServer) -> None:
    @define_eval
    async def early(t: EvalContext) -> None:
        await t.send("hello")
        verdict = await t.judge.rubric("Is the reply polite?")
        await t.send(f"the judge said {verdict.state} with {verdict.score}")

    result = run(early)
    assert (result.outcome, result.error) == ("passed", None)
    users = [e.text for e in result.events if e.type == "message" and e.role == "user"]
    assert users == ["hello", "the judge said passed with 0.9"]
    assert len(result.assertions) == 1  # awaiting the handle does not record the verdict twice


def test_an_eval_timing_out_while_its_judge_hangs_fails_and_the_judge_is_inconclusive(server: LLMServer) -> None:
    server.set_script(lambda request: Reply(fault=Fault.hang()))

    @define_eval(timeout=0.5)
    async def slow_judge(t: EvalContext) -> None:
        await t.send("hello")
        t.judge.rubric("Is the reply polite?")  # not awaited: the run still waits for it, within its timeout

    started = time.monotonic()
    result = run(slow_judge)
    assert time.monotonic() - started < 3
    assert result.outcome == "failed"
    assert result.error is not None and result.error.type == "TimeoutError"
    (assertion,) = result.assertions
    assert (assertion.state, assertion.score, assertion.cause) == ("inconclusive", None, "timeout")
    assert assertion.reason == "the run ended (timeout or error) before the judge answered"


def test_judge_max_retries_bounds_the_requests_of_one_judge_call(server: LLMServer) -> None:
    server.set_script(lambda request: Reply(fault=Fault.server_error(503)))

    @define_eval
    async def unavailable(t: EvalContext) -> None:
        await t.send("hello")
        t.judge.rubric("Is the reply polite?")

    started = time.monotonic()
    result = run(unavailable, max_retries=0)
    assert time.monotonic() - started < 3
    (assertion,) = result.assertions
    assert (assertion.state, assertion.cause) == ("inconclusive", "provider_error")
    assert "HTTP 503" in assertion.reason
    assert len(server.requests) == 1


def test_judge_max_retries_must_not_be_negative() -> None:
    with pytest.raises(ConfigError, match="judge.max_retries"):
        define_config(judge={"max_retries": -1})


def test_an_eval_judge_setting_overrides_only_the_keys_it_names() -> None:
    @define_eval(judge={"default_threshold": 0.9, "max_retries": 0})
    async def strict(t: EvalContext) -> None:
        pass

    options = ExecOptions(timeout=30, judge=JudgeSettings(model="openai/a", fallback="anthropic/f", timeout=5))
    merged = judge_settings(strict, options)
    assert (merged.model, merged.fallback, merged.timeout) == ("openai/a", "anthropic/f", 5)
    assert (merged.default_threshold, merged.max_retries) == (0.9, 0)


def test_grader_replaces_the_model_and_keeps_the_other_judge_settings() -> None:
    @define_eval(judge={"model": "openai/b", "default_threshold": 0.9})
    async def graded(t: EvalContext) -> None:
        pass

    options = ExecOptions(timeout=30, judge=JudgeSettings(model="openai/a"), grader="openai/d")
    merged = judge_settings(graded, options)
    assert (merged.model, merged.default_threshold) == ("openai/d", 0.9)


def test_a_judge_that_never_reached_the_provider_costs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    @define_eval
    async def keyless(t: EvalContext) -> None:
        await t.send("hello")
        t.judge.rubric("Is the reply polite?")

    result = run(keyless, model="openai/unpriced-model")
    assert result.assertions[0].cause == "no_api_key"
    assert (result.judge_spend.calls, result.judge_spend.cost, result.judge_spend.unpriced) == (0, 0.0, [])


def test_the_judge_is_shown_what_the_eval_sent_and_a_new_session_starts_over(server: LLMServer) -> None:
    @define_eval
    async def asks(t: EvalContext) -> None:
        await t.send("Where is order 1234?")
        t.judge.rubric("Does it answer the question?")
        t.new_session()
        await t.send("Cancel order 99")
        t.judge.rubric("Does it answer the question?")

    result = run(asks)
    assert (result.outcome, result.error) == ("passed", None)
    assert [a.judge_calls[0].input for a in result.assertions] == ["Where is order 1234?", "Cancel order 99"]
    assert "Where is order 1234?" in server.requests[0].last_user_text


def test_a_judge_of_the_reply_before_the_first_send_fails_the_run_at_its_line(server: LLMServer) -> None:
    @define_eval
    async def too_early(t: EvalContext) -> None:
        t.judge.rubric("Is the reply polite?")
        await t.send("hello")

    result = run(too_early)
    assert result.outcome == "failed" and result.error is not None
    assert result.error.kind == "usage" and "nothing was sent in this conversation yet" in result.error.message
    assert result.error.location is not None and result.error.location.endswith(
        f":{too_early.fn.__code__.co_firstlineno + 2}"
    )
    assert server.requests == []


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_a_finished_run_is_freed_by_reference_counting_not_left_in_cycles(server: LLMServer, kind: str) -> None:
    import gc
    import weakref

    from niceeval._eval.context import ContextBase
    from niceeval.judge._judge import Judge, JudgeSession

    seen: list[weakref.ref[object]] = []

    async def judged_async(t: EvalContext) -> None:
        await t.send("hello")
        t.judge.rubric("polite?")
        seen.extend(weakref.ref(o) for o in (t, t.judge, t.judge._session, t.judge.autoevals))

    def judged_sync(t: SyncEvalContext) -> None:
        t.send("hello")
        t.judge.rubric("polite?")
        seen.extend(weakref.ref(o) for o in (t, t.judge, t.judge._session, t.judge.autoevals))

    spec = define_eval(name=f"judged_{kind}")(judged_async if kind == "async" else judged_sync)
    gc.collect()
    gc.disable()  # only reference counting frees what the run made
    try:
        result = run(spec)
        assert result.error is None and result.assertions[0].score == 0.9
        alive = [type(ref()).__name__ for ref in seen if ref() is not None]
        assert alive == [], f"kept alive by reference cycles after the run: {alive}"
        assert not [o for o in gc.get_objects() if isinstance(o, ContextBase | Judge | JudgeSession)]
    finally:
        gc.enable()
