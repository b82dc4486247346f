"""Every failed run gets a class, `agent`, `infra` or `eval`: infra runs are retried, then left out of pass rates.

The provider paths run against the offline server (`llm_server`): an `openai_agent` whose model the server answers
with 503 every time is a provider outage.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from niceeval import (
    EvalContext,
    EvalFatalError,
    ExperimentFatalError,
    RunResult,
    SyncEvalContext,
    define_config,
    define_eval,
)
from niceeval._core.summary import EvalTally, PlannedEval, Problem, SuiteSummary
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions
from niceeval._run.suite import SuiteOptions, run_suite
from niceeval._run.suite_gates import GateCollector, SuiteGates
from niceeval.agents import ModelAgentOptions, openai_agent
from niceeval.expect import includes
from niceeval.providers import RetryPolicy, _limiter
from niceeval.render import suite_rate
from niceeval.stats import clustered_rate
from niceeval.testing import Fault, LLMServer, Reply

FAST = ModelAgentOptions(retry=RetryPolicy(max_retries=1, base_delay=0.001, max_delay=0.01))
"""Two requests per model call (the first and one retry), without waiting between them."""


def echo(message: str) -> str:
    if message == "crash":
        raise RuntimeError("the agent crashed")
    return "echo: " + message


class Collected:
    """A reporter keeping every finished run."""

    def __init__(self) -> None:
        self.runs: list[RunResult] = []
        self.tallies: list[EvalTally] = []

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        pass

    def run_finished(self, result: RunResult) -> None:
        self.runs.append(result)

    def eval_finished(self, tally: EvalTally, summary: SuiteSummary) -> None:
        self.tallies.append(tally)

    def finish(self, summary: SuiteSummary) -> None:
        self.tallies.extend(summary.unfinished)

    def of(self, name: str) -> list[RunResult]:
        return sorted((r for r in self.runs if r.eval_id.endswith(f"::{name}")), key=lambda r: r.run_index)


def suite(
    specs: Sequence[EvalSpec], *, runs: int = 1, exec_options: dict[str, Any] | None = None, **options: Any
) -> tuple[SuiteSummary, Collected]:
    collected = Collected()
    entries = [EvalEntry(id=f"evals/x.py::{spec.name}", spec=spec) for spec in specs]
    exec_ = ExecOptions(timeout=30, agent=echo, **(exec_options or {}))
    settings = SuiteOptions(runs=runs, exec=exec_, **options)
    summary = anyio.run(run_suite, entries, [], settings, [collected])
    return summary, collected


@pytest.fixture(autouse=True)
def fresh_limiters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_limiter, "_limiters", {})


@pytest.fixture
def server(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    """The offline server: model `down` answers 503 to every request, any other model `fine`."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    llm_server.set_script(lambda request: Reply(text="fine"))
    llm_server.faults = lambda request: Fault.server_error(503) if request.model == "down" else None
    return llm_server


def _model_agent(server: LLMServer, model: str) -> Any:
    return openai_agent(f"openai/{model}", base_url=server.base_url, options=FAST)


def _requests(server: LLMServer, model: str) -> int:
    return sum(1 for request in server.requests if request.model == model)


# what the run's own failure says


def test_an_assertion_the_agent_missed_is_agent() -> None:
    @define_eval
    async def miss(t: EvalContext) -> None:
        await t.send("hi")
        t.check(t.reply, includes("never"))

    _, seen = suite([miss])
    assert [(r.outcome, r.failure) for r in seen.runs] == [("failed", "agent")]


def test_a_value_error_in_the_eval_s_own_code_is_eval() -> None:
    @define_eval
    async def own_bug(t: EvalContext) -> None:
        await t.send("hi")
        int("not a number")

    _, seen = suite([own_bug])
    (run,) = seen.runs
    assert (run.outcome, run.failure, run.error.type if run.error else None) == ("failed", "eval", "ValueError")


def test_an_exception_raised_inside_the_agent_is_agent() -> None:
    @define_eval
    async def agent_crash(t: EvalContext) -> None:
        await t.send("crash")

    _, seen = suite([agent_crash])
    assert [(r.failure, r.error.message if r.error else None) for r in seen.runs] == [("agent", "the agent crashed")]


def test_a_plain_assert_in_the_eval_is_a_check_the_agent_missed() -> None:
    @define_eval
    def asserted(t: SyncEvalContext) -> None:
        t.send("hi")
        assert "never" in t.reply

    _, seen = suite([asserted])
    assert [r.failure for r in seen.runs] == ["agent"]


def test_a_passing_or_skipped_run_has_no_class() -> None:
    @define_eval
    async def fine(t: EvalContext) -> None:
        await t.send("hi")

    @define_eval
    async def skipped(t: EvalContext) -> None:
        t.skip("not today")

    _, seen = suite([fine, skipped])
    assert sorted((r.outcome, r.failure) for r in seen.runs) == [("passed", None), ("skipped", None)]


def test_a_judge_without_a_key_under_fail_on_inconclusive_is_infra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    @define_eval
    async def judged(t: EvalContext) -> None:
        await t.send("hi")
        t.judge.rubric("Is the reply polite?")

    summary, seen = suite(
        [judged],
        exec_options={"fail_on_inconclusive": True, "judge": define_config(judge={"model": "openai/j"}).judge},
        infra_retries=1,
    )
    (run,) = seen.runs
    # not retried: a key does not appear between attempts, and another attempt would pay the agent again
    assert (run.outcome, run.failure, run.attempts) == ("failed", "infra", 1)
    assert run.assertions[0].cause == "no_api_key"
    assert summary.infra == 1


# a provider outage


def test_an_outage_is_infra_retried_and_left_out_of_the_pass_rate_and_its_interval(server: LLMServer) -> None:
    down = _model_agent(server, "down")

    @define_eval(agent=down)
    async def outage(t: EvalContext) -> None:
        await t.send("hi")

    @define_eval
    async def passes(t: EvalContext) -> None:
        await t.send("hi")

    @define_eval
    async def misses(t: EvalContext) -> None:
        await t.send("hi")
        t.check(t.reply, includes("never"))

    summary, seen = suite([outage, passes, misses], runs=2, infra_retries=2)

    outage_runs = seen.of("outage")
    assert [(r.outcome, r.failure, r.attempts) for r in outage_runs] == [("failed", "infra", 3)] * 2
    assert outage_runs[0].error is not None and outage_runs[0].error.type == "ProviderError"
    # 2 runs x 3 attempts x 2 requests per model call (the call and its one retry)
    assert _requests(server, "down") == 12

    tallies = {t.eval.id.rpartition("::")[2]: t for t in seen.tallies}
    assert (tallies["outage"].infra, tallies["outage"].counted, tallies["outage"].pass_rate(strict=False)) == (
        2,
        0,
        None,
    )
    assert summary.status_of(tallies["outage"]) == "failed"  # an outage measures nothing: never a pass
    assert summary.infra == 2
    assert summary.exit_code == 1

    rate = suite_rate(seen.tallies, strict=False)
    without = clustered_rate([(2, 2), (0, 2)], ["evals/x.py::passes", "evals/x.py::misses"])
    assert (rate.value, rate.low, rate.high, rate.clusters) == (without.value, without.low, without.high, 2)
    assert rate.value == 0.5


def test_a_run_whose_retry_succeeds_passes_and_says_how_often_it_ran(server: LLMServer) -> None:
    failing = iter(range(2))  # the first model call and its retry fail: the run's first attempt is infra
    server.faults = lambda request: Fault.server_error(503) if next(failing, None) is not None else None
    flaky = _model_agent(server, "flaky")

    @define_eval(agent=flaky)
    async def recovers(t: EvalContext) -> None:
        await t.send("hi")

    summary, seen = suite([recovers], infra_retries=2)
    assert [(r.outcome, r.failure, r.attempts) for r in seen.runs] == [("passed", None, 2)]
    assert _requests(server, "flaky") == 3
    assert (summary.infra, summary.exit_code) == (0, 0)


def test_infra_retries_zero_reports_the_first_attempt(server: LLMServer) -> None:
    down = _model_agent(server, "down")

    @define_eval(agent=down)
    async def outage(t: EvalContext) -> None:
        await t.send("hi")

    _, seen = suite([outage], infra_retries=0)
    assert [(r.failure, r.attempts) for r in seen.runs] == [("infra", 1)]
    assert _requests(server, "down") == 2


def test_an_eval_with_some_infra_runs_is_judged_on_the_others() -> None:
    calls = iter(range(4))

    def sometimes_down(message: str) -> str:
        if next(calls) % 2:
            from niceeval.providers import ProviderError

            raise ProviderError("provider_error", "openai/x: HTTP 503", status=503, transient=True)
        return "echo: " + message

    @define_eval(agent=sometimes_down, sequential_runs=True)
    async def half(t: EvalContext) -> None:
        await t.send("hi")

    summary, seen = suite([half], runs=4, infra_retries=0)
    assert [r.failure for r in seen.runs] == [None, "infra", None, "infra"]
    (tally,) = seen.tallies
    assert (tally.counted, tally.pass_rate(strict=False), summary.status_of(tally)) == (2, 1.0, "passed")
    assert summary.exit_code == 0


def test_the_suite_pass_rate_gate_counts_cases_without_their_infra_runs(server: LLMServer) -> None:
    down = _model_agent(server, "down")

    @define_eval(agent=down)
    async def outage(t: EvalContext) -> None:
        await t.send("hi")

    @define_eval
    async def passes(t: EvalContext) -> None:
        await t.send("hi")

    collector = GateCollector(gates=SuiteGates(min_pass_rate=1.0))
    entries = [EvalEntry(id=f"evals/x.py::{s.name}", spec=s) for s in (outage, passes)]
    options = SuiteOptions(exec=ExecOptions(timeout=30, agent=echo), infra_retries=0)
    anyio.run(run_suite, entries, [], options, [collector])
    (verdict,) = collector.verdicts
    assert (verdict.estimate.value, verdict.estimate.clusters, verdict.passed) == (1.0, 1, True)


# the classify_failure hook


def test_a_hook_reclassifies_a_failed_run() -> None:
    @define_eval
    async def crash(t: EvalContext) -> None:
        await t.send("crash")

    @define_eval
    async def miss(t: EvalContext) -> None:
        await t.send("hi")
        t.check(t.reply, includes("never"))

    def hook(result: RunResult) -> str | None:
        assert result.failure is not None  # the hook sees niceeval's class first
        return "infra" if result.error is not None and "crashed" in result.error.message else None

    summary, seen = suite([crash, miss], exec_options={"classify_failure": hook}, infra_retries=1)
    assert [(r.failure, r.attempts) for r in seen.of("crash")] == [("infra", 2)]  # reclassified, so retried
    assert [r.failure for r in seen.of("miss")] == ["agent"]  # None keeps niceeval's class
    assert summary.infra == 1


def test_a_hook_that_raises_or_answers_nonsense_keeps_the_class_and_says_so() -> None:
    @define_eval
    async def miss(t: EvalContext) -> None:
        await t.send("hi")
        t.check(t.reply, includes("never"))

    def broken(result: RunResult) -> str:
        raise KeyError("oops")

    _, seen = suite([miss], exec_options={"classify_failure": broken})
    (run,) = seen.runs
    assert run.failure == "agent"
    assert run.warnings == ["classify_failure raised KeyError: 'oops'; the run keeps the class 'agent'"]

    _, seen = suite([miss], exec_options={"classify_failure": lambda result: "network"})
    (run,) = seen.runs
    assert run.failure == "agent"
    assert run.warnings == [
        "classify_failure returned 'network', not one of agent, infra, eval or None; the run keeps the class 'agent'"
    ]


def test_a_hook_that_is_not_callable_is_a_config_error() -> None:
    from niceeval import ConfigError

    with pytest.raises(ConfigError, match="classify_failure is a function taking the failed RunResult"):
        define_config(classify_failure="infra")


# fatal errors and the stop-loss


def test_eval_fatal_error_stops_that_eval_s_remaining_runs_only() -> None:
    runs = iter(range(4))

    @define_eval(sequential_runs=True)
    async def gives_up(t: EvalContext) -> None:
        await t.send("hi")
        if next(runs) == 1:
            raise EvalFatalError("the fixture service is gone", failure="infra")

    @define_eval
    async def others(t: EvalContext) -> None:
        await t.send("hi")

    summary, seen = suite([gives_up, others], runs=4, infra_retries=2)
    assert [(r.run_index, r.outcome, r.failure, r.attempts) for r in seen.of("gives_up")] == [
        (0, "passed", None, 1),
        (1, "failed", "infra", 1),  # a fatal error is not retried
    ]
    assert len(seen.of("others")) == 4
    assert summary.not_started == 2
    assert summary.stopped is None
    assert summary.halted == {
        "evals/x.py::gives_up": "EvalFatalError in evals/x.py::gives_up (run 2): the fixture service is gone"
    }


def test_eval_fatal_error_without_a_class_is_classified_by_where_it_was_raised() -> None:
    @define_eval
    async def gives_up(t: EvalContext) -> None:
        raise EvalFatalError("nothing to test")

    _, seen = suite([gives_up])
    assert [(r.failure, r.error.stops if r.error else None) for r in seen.runs] == [("eval", "eval")]


def test_experiment_fatal_error_stops_the_suite_and_keeps_what_ran() -> None:
    @define_eval
    async def first(t: EvalContext) -> None:
        await t.send("hi")

    @define_eval
    async def fatal(t: EvalContext) -> None:
        raise ExperimentFatalError("the API key was revoked", failure="infra")

    @define_eval
    async def never(t: EvalContext) -> None:
        await t.send("hi")

    summary, seen = suite([first, fatal, never], runs=2, concurrency=1)
    assert [(r.eval_id.rpartition("::")[2], r.run_index, r.failure) for r in seen.runs] == [
        ("first", 0, None),
        ("first", 1, None),
        ("fatal", 0, "infra"),
    ]
    assert summary.stopped == ("stopped by ExperimentFatalError in evals/x.py::fatal (run 1): the API key was revoked")
    assert (summary.not_started, summary.exit_code) == (3, 1)


def test_the_stop_loss_stops_the_suite_after_n_infra_failures_in_a_row(server: LLMServer) -> None:
    down = _model_agent(server, "down")

    @define_eval
    async def fine(t: EvalContext) -> None:
        await t.send("hi")

    specs = [fine]
    for name in ("a", "b", "c", "d"):

        async def body(t: EvalContext) -> None:
            await t.send("hi")

        specs.append(define_eval(name=name, agent=down)(body))

    summary, seen = suite(specs, concurrency=1, infra_retries=0, stop_after_infra=2)
    assert [(r.eval_id.rpartition("::")[2], r.failure) for r in seen.runs] == [
        ("fine", None),
        ("a", "infra"),
        ("b", "infra"),
    ]
    assert summary.stopped == "stopped after 2 runs in a row failed for infra (--stop-after-infra 2)"
    assert (summary.not_started, summary.infra, summary.exit_code) == (2, 2, 1)
    assert _requests(server, "down") == 4


def test_a_run_that_is_not_infra_resets_the_stop_loss(server: LLMServer) -> None:
    down = _model_agent(server, "down")
    specs = []
    for name, agent in (("a", down), ("ok", None), ("b", down), ("ok2", None), ("c", down)):

        async def body(t: EvalContext) -> None:
            await t.send("hi")

        specs.append(define_eval(name=name, agent=agent)(body))

    summary, seen = suite(specs, concurrency=1, infra_retries=0, stop_after_infra=2)
    assert len(seen.runs) == 5
    assert summary.stopped is None


# sandboxes


def _fixture(root: Path) -> None:
    folder = root / "fixtures" / "app"
    folder.mkdir(parents=True)
    (folder / "app.py").write_text("VALUE = 1\n")


def test_a_sandbox_that_cannot_start_is_infra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from niceeval.sandbox import _bwrap

    _fixture(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))  # no bwrap on this machine's PATH
    _bwrap.bwrap_problem.cache_clear()  # it is asked once per process: ask again without bwrap, and after

    @define_eval(fixture="fixtures/app", sandbox="bwrap")
    async def sandboxed(t: EvalContext) -> None:
        await t.send("hi")

    try:
        summary, seen = suite([sandboxed], exec_options={"root": tmp_path}, infra_retries=1)
    finally:
        _bwrap.bwrap_problem.cache_clear()
    (run,) = seen.runs
    assert (run.outcome, run.failure, run.attempts) == ("failed", "infra", 2)
    assert run.error is not None and "bwrap is not installed" in run.error.message
    assert summary.infra == 1


def test_a_missing_fixture_is_the_eval_s_own_mistake(tmp_path: Path) -> None:
    @define_eval(fixture="fixtures/nowhere")
    async def sandboxed(t: EvalContext) -> None:
        await t.send("hi")

    _, seen = suite([sandboxed], exec_options={"root": tmp_path})
    (run,) = seen.runs
    assert (run.outcome, run.failure, run.attempts) == ("failed", "eval", 1)
