"""Execute one run of one eval: fresh context, the user function under a timeout, then fold."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio

from niceeval._core.awaits import CURRENT_TRACKER
from niceeval._core.errors import ErrorInfo, UsageError, error_info
from niceeval._core.events import UsageEvent
from niceeval._core.outcome import fold
from niceeval._core.results import FailureHook, RunResult, Spend
from niceeval._core.sandbox_kinds import CURRENT_SANDBOX, SandboxChoice
from niceeval._core.settings import JudgeSettings, Price
from niceeval._core.spans import SpanRecord
from niceeval._core.threads import Portal, TaskPortal, call_in_thread
from niceeval._eval.checks import StopEval
from niceeval._eval.compare import Comparison
from niceeval._eval.context import ContextBase, EvalContext, RunInputs, RunState, SyncEvalContext
from niceeval._eval.efficiency import usage_of
from niceeval._eval.points import earned, points_rule
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.failures import caught, classified, sandbox_failed
from niceeval._run.judging import JudgeSlot, SuiteJudges, spend_of
from niceeval._run.stray_threads import watching
from niceeval.agents._runtime import EXPERIMENT_MODEL, WORKSPACE, PerVariant

if TYPE_CHECKING:
    from niceeval._eval.experiment import ExperimentView
    from niceeval._eval.spec import EvalFunction
    from niceeval._run.sandboxing import SharedWorkspace
    from niceeval.sandbox import LocalSandbox
    from niceeval.tracing import Trace

_CLOSE_TIMEOUT_S = 10.0


@dataclass(frozen=True, kw_only=True, slots=True)
class ExecOptions:
    """Settings every run shares."""

    timeout: float
    agent: Any = None
    fail_on_inconclusive: bool = False
    pricing: Mapping[str, Price] = field(default_factory=dict)
    root: Path = field(default_factory=Path.cwd)
    """Project root: fixtures are resolved against it."""
    keep_sandbox: bool | Literal["failed", "all"] = False
    """Keep sandbox workspaces after the run (`True`/`"all"`, or `"failed"`: only failed or errored runs');
    their paths are printed and stored with the result."""
    sandbox: SandboxChoice | PerVariant | None = None
    """The config's sandbox kind for sandbox evals (an eval's `sandbox=` wins); None: bwrap where it works."""
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    """The config's judge settings (an eval's `judge=` overrides them per key)."""
    grader: str | None = None
    """`--grader MODEL`: overrides every judge model."""
    judge_samples: int | None = None
    """`--judge-samples K`: how many times each judge call asks (a call's `samples=` wins)."""
    no_cache: bool = False
    """`--no-cache`: judges always call their model."""
    cache_only: bool = False
    """`--cache-only`: a judge verdict missing from the cache is inconclusive instead of a model call."""
    judges: SuiteJudges | None = None
    """The suite's judge clients and cache (set by the suite; without it a run that judges opens its own)."""
    agent_for_run: Callable[[str, int], Any] | None = None
    """`rescore`: the agent of each `(eval_id, run_index)`, replacing the eval's and the config's."""
    experiment: ExperimentView | None = None
    """`niceeval exp`: the experiment the runs are part of (`t.experiment`, `t.model`, `t.flags`)."""
    identities: Mapping[str, str] = field(default_factory=dict)
    """`niceeval exp`: each eval's slot identity (recorded on its runs, so a later run can carry them)."""
    classify_failure: FailureHook | None = None
    """The config's `classify_failure` hook: may reclassify each failed run (`agent`, `infra`, `eval`)."""


async def _call(entry: EvalEntry, ctx: ContextBase, portal: Portal | None) -> None:
    spec = entry.spec
    if portal is None:
        await spec.fn(ctx)
        return
    # A sync eval cannot be interrupted; on timeout its pool thread is abandoned and finishes on its own.
    returned = await call_in_thread(lambda: spec.fn(ctx))
    if hasattr(returned, "__await__"):
        await returned


def _never_awaited(state: RunState, error: ErrorInfo | None) -> ErrorInfo | None:
    """A usage error for the first coroutine of the API the eval never awaited (the likely cause of `error`)."""
    forgotten = state.awaits.never_awaited()
    if not forgotten:
        return None
    message = forgotten[0].message()
    if len(forgotten) > 1:
        message += f" ({len(forgotten) - 1} more call(s) were not awaited either.)"
    if error is not None and error.message != forgotten[0].message():  # `t.reply` already raised this one
        message += f" The eval then ended with {error.type}: {error.message}"
    return ErrorInfo(type="UsageError", message=message, location=forgotten[0].location, kind="usage")


def unawaited_requires(state: RunState) -> ErrorInfo | None:
    for handle in state.pending_requires:
        if not handle._awaited:
            return error_info(
                UsageError(
                    f"t.require(...) at {handle.location} uses an async matcher and was not awaited; "
                    "write `await t.require(...)`."
                )
            )
    return None


def evaluate_scoped(state: RunState) -> ErrorInfo | None:
    """Score the scoped assertions over the finished event stream; the first API misuse among them, if any."""
    misuse: ErrorInfo | None = None
    for handle, subject in [(h, state.log.events) for h in state.scoped] + [
        (h, state.log.spans) for h in state.span_scoped
    ]:
        try:
            state.assertions.append(handle.evaluate(subject))
        except UsageError as exc:
            misuse = misuse or error_info(exc)
    return misuse


def judge_settings(spec: EvalSpec, options: ExecOptions) -> JudgeSettings:
    """The eval's judge settings: config, then the eval's `judge=` keys, then `--grader` for the model."""
    merged = options.judge
    if spec.judge is not None:
        merged = merged.model_copy(update=spec.judge.model_dump(exclude_unset=True))
    if options.grader:
        merged = merged.model_copy(update={"model": options.grader})
    if options.judge_samples is not None:
        merged = merged.model_copy(update={"samples": options.judge_samples})
    return merged


def _exit_called(exc: SystemExit | KeyboardInterrupt) -> ErrorInfo:
    """The run's error when the eval (or its agent) asked the whole process to stop: only this eval fails."""
    info = error_info(exc)
    if isinstance(exc, SystemExit):
        what = f"the eval called sys.exit({exc.code!r})" if exc.code is not None else "the eval called sys.exit()"
    else:
        what = "the eval raised KeyboardInterrupt"
    return info.model_copy(
        update={
            "message": f"{what}: an eval ends by returning or failing a check; this eval failed, the rest ran",
            "failure": "eval",
        }
    )


async def _body(entry: EvalEntry, ctx: ContextBase, portal: Portal | None) -> ErrorInfo | None:
    try:
        await _call(entry, ctx, portal)
    except StopEval:
        pass
    except Exception as exc:
        return caught(exc, getattr(entry.spec.fn, "__code__", None))
    except (SystemExit, KeyboardInterrupt) as exc:  # the eval's own: Ctrl-C cancels the run instead of raising here
        return _exit_called(exc)
    finally:
        if ctx._opened():  # shielded: the agent's sessions close also when the run timed out or was cancelled
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_TIMEOUT_S):
                await ctx._close()
    return None


def _location(entry: EvalEntry) -> str:
    """The eval's `file:line`, for a message (made only when one is: `entry.file` asks the working directory)."""
    return f"{entry.file}:{entry.spec.line}"


def _timed_out(entry: EvalEntry, timeout: float, *, ran_s: float | None = None) -> ErrorInfo:
    message = f"the eval did not finish within its {timeout:g} s timeout"
    if ran_s is not None:  # the loop never got the chance to stop it: something blocked it
        message += (
            f": it ran {ran_s:.1f} s because it blocked the event loop, so it could not be stopped in time "
            "(a blocking call such as time.sleep() inside `async def`? await anyio.sleep() or use a plain `def` eval)"
        )
    return ErrorInfo(
        type="TimeoutError",
        message=f"{message} (raise it with @define_eval(timeout=...) or --timeout)",
        location=_location(entry),
        kind="timeout",
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class _RunSetup:
    run_index: int
    sandbox: LocalSandbox | None
    judges: SuiteJudges
    trace: Trace | None = None


def _agent(entry: EvalEntry, options: ExecOptions, run_index: int) -> object:
    """The agent under test in this run: the eval's, else the config's; bound to the variant; `rescore`'s replay."""
    agent = entry.spec.agent if entry.spec.agent is not None else options.agent
    if isinstance(agent, PerVariant):
        agent = agent.bind(entry.variant)
    if options.agent_for_run is not None:  # `rescore`: the recorded conversation stands in for every agent
        agent = options.agent_for_run(entry.id, run_index)
    return agent


async def _run_body(entry: EvalEntry, state: RunState, options: ExecOptions, setup: _RunSetup) -> ErrorInfo | None:
    spec = entry.spec
    timeout = spec.timeout or options.timeout
    settings = judge_settings(spec, options)
    error: ErrorInfo | None = None
    slot = JudgeSlot(
        setup.judges, settings=settings, grader=options.grader, pricing=options.pricing, run_index=setup.run_index
    )
    started = anyio.current_time()
    # The task group's own scope carries the deadline (as `anyio.fail_after` would, one scope fewer a run).
    async with anyio.create_task_group() as tg:
        tg.cancel_scope.deadline = started + timeout
        # A plain `def` eval runs in a thread, which reaches the loop through a portal on the run's task group.
        portal = None if spec.is_async else TaskPortal(tg)
        inputs = RunInputs(
            eval_id=entry.id,
            task_group=tg,
            agent=_agent(entry, options, setup.run_index),
            case=entry.case,
            variant=entry.variant,
            sandbox=setup.sandbox,
            judge=slot,
            pricing=options.pricing,
            followup_model=settings.model,
            users=slot,
            portal=portal,
            experiment=options.experiment,
            trace=setup.trace,
        )
        ctx = EvalContext(inputs, state) if portal is None else SyncEvalContext(inputs, state)
        error = await _body(entry, ctx, portal)
    ran = anyio.current_time() - started
    if tg.cancel_scope.cancelled_caught:
        error = _timed_out(entry, timeout)
    elif ran > timeout:
        # A run that blocked the loop past its deadline was never cancelled (the loop could not run the timer):
        # it still ran out of time, and passing it would be a silent wrong result.
        error = _timed_out(entry, timeout, ran_s=ran)
    state.assertions.extend(slot.results())
    return error


async def execute(entry: EvalEntry, run_index: int, options: ExecOptions) -> RunResult:
    """Run the eval once and return its folded result. Never raises for anything the eval does."""
    result, _ = await execute_run(entry, run_index, options)
    return result


async def execute_run(
    entry: EvalEntry,
    run_index: int,
    options: ExecOptions,
    shared: SharedWorkspace | None = None,
    *,
    trace: Trace | None = None,
) -> tuple[RunResult, list[Comparison]]:
    """Like `execute`, with the comparisons (`t.max_score`, `t.select_best`) the run registered, for the suite to
    resolve once the other variants of the case have run. `shared`: an eval group's sandbox, used (and left open)
    instead of the eval's own. `trace`: the production trace an online eval scores (an eval with `trace=` loads
    its saved one)."""
    if trace is None and entry.spec.trace is not None:
        from niceeval.tracing import Trace

        try:
            trace = Trace.load(entry.spec.file.parent / entry.spec.trace)
        except ValueError as exc:
            info = ErrorInfo(type="UsageError", message=str(exc), location=_location(entry), kind="usage")
            return _result(entry, run_index, options, RunState(), info, duration_s=0.0, kept=None), []
    if trace is not None:  # the trace is the agent (or answers the live agent's tools), sent the trace's input
        from niceeval.agents._runtime import TraceAgent, replaying_agent

        try:
            agent = (
                replaying_agent(_agent(entry, options, run_index), trace)
                if entry.spec.replay == "live"
                else TraceAgent(trace)
            )
        except UsageError as exc:
            info = ErrorInfo(type="UsageError", message=str(exc), location=_location(entry), kind="usage")
            return _result(entry, run_index, options, RunState(), info, duration_s=0.0, kept=None), []
        entry = replace(
            entry, spec=replace(entry.spec, fn=after_input(entry.spec.fn, trace.input, entry.spec.is_async))
        )
        options = replace(options, agent_for_run=lambda _eval_id, _index: agent)
    spec = entry.spec
    state = RunState(points_possible=spec.points)
    start = time.perf_counter()
    sandbox: LocalSandbox | None = shared.sandbox if shared is not None else None
    kept: Path | None = None
    error: ErrorInfo | None = None
    try:
        if shared is not None:
            shared.commands.log = state.log
        elif spec.fixture is not None:
            from niceeval._run.sandboxing import CommandLog, WorkspaceSettings, fixture_dir, open_workspace

            folder = fixture_dir(spec, options.root, _location(entry))
            cache = options.root / ".niceeval" / "fixtures"
            settings = WorkspaceSettings(default=options.sandbox, cache=cache, root=options.root)
            opening = time.perf_counter()
            sandbox = await open_workspace(folder, CommandLog(state.log), entry, run_index, settings)
            state.sandbox = sandbox.record(open_s=time.perf_counter() - opening)
        token, tracking = WORKSPACE.set(sandbox.path if sandbox else None), CURRENT_TRACKER.set(state.awaits)
        current = CURRENT_SANDBOX.set(sandbox)
        model = EXPERIMENT_MODEL.set(options.experiment.model if options.experiment is not None else None)
        try:
            async with suite_judges(options) as judges:
                with watching(entry.id):
                    setup = _RunSetup(run_index=run_index, sandbox=sandbox, judges=judges, trace=trace)
                    error = await _run_body(entry, state, options, setup)
        finally:
            EXPERIMENT_MODEL.reset(model)
            WORKSPACE.reset(token)
            CURRENT_SANDBOX.reset(current)
            CURRENT_TRACKER.reset(tracking)
        scoped_misuse = evaluate_scoped(state)  # always: a crashed run still keeps what its events show
        forgotten = _never_awaited(state, error)  # first: a missing await explains what went wrong after it
        error = forgotten or error or state.usage_error or unawaited_requires(state) or scoped_misuse
        if shared is not None:
            from niceeval._run.sandboxing import score_diff

            await score_diff(shared.sandbox, state)
            error = error or state.usage_error
        elif sandbox is not None:
            from niceeval._run.sandboxing import score_workspace

            await score_workspace(sandbox, spec, folder, state, _location(entry), errored=error is not None)
            error = error or state.usage_error
    except Exception as exc:  # the sandbox itself failed (missing fixture, disk full): the run fails, visibly
        error = error or (sandbox_failed(exc) if spec.fixture is not None and sandbox is None else error_info(exc))
    finally:
        if shared is not None:
            shared.commands.log = None
        elif sandbox is not None:
            with anyio.CancelScope(shield=True):
                kept = await sandbox.close(keep=_keep(options, state, error))
    duration = time.perf_counter() - start
    return _result(entry, run_index, options, state, error, duration_s=duration, kept=kept), state.comparisons


def _result(
    entry: EvalEntry,
    run_index: int,
    options: ExecOptions,
    state: RunState,
    error: ErrorInfo | None,
    *,
    duration_s: float,
    kept: Path | None,
) -> RunResult:
    """The finished run, folded: its outcome, what it recorded, what it spent."""
    rule = points_rule(entry.spec)
    points = earned(state.assertions) if rule is not None else None
    outcome = fold(
        state.assertions,
        errored=error is not None,
        skipped=state.skip_reason is not None,
        fail_on_inconclusive=options.fail_on_inconclusive,
        points_short=rule is not None and points is not None and rule.short(points),
    )
    result = RunResult(
        eval_id=entry.id,
        file=entry.file,
        line=entry.spec.line,
        run_index=run_index,
        outcome=outcome,
        duration_s=duration_s,
        error=error,
        skip_reason=state.skip_reason,
        assertions=state.assertions,
        events=state.log.events,
        sandbox_path=str(kept) if kept else None,
        workspace_diff=state.workspace_diff,
        agent_spend=agent_spend_of(state, options),
        judge_spend=judge_spend_of(state, options),
        case_id=entry.case.id if entry.case is not None else None,
        metadata=entry.case.metadata if entry.case is not None else {},
        variant=entry.variant.names if entry.variant is not None else None,
        group=entry.group,
        warnings=state.warnings,
        spans=[SpanRecord.of(span) for span in state.log.spans],
        points=points,
        points_possible=rule.possible if rule is not None else None,
        identity=options.identities.get(entry.id),
        sandbox=state.sandbox,
    )
    return classified(result, options.classify_failure)


def failed_without_running(entry: EvalEntry, run_index: int, options: ExecOptions, error: ErrorInfo) -> RunResult:
    """The result of a run that could not start (its eval group's setup failed, or a fatal error before it)."""
    state = RunState(points_possible=entry.spec.points)
    return _result(entry, run_index, options, state, error, duration_s=0.0, kept=None)


def _keep(options: ExecOptions, state: RunState, error: ErrorInfo | None) -> bool:
    """Whether `--keep-sandbox` keeps this run's workspace: always, never, or when the run failed or errored."""
    if options.keep_sandbox != "failed":
        return bool(options.keep_sandbox)
    verdict = fold(state.assertions, errored=False, skipped=False, fail_on_inconclusive=options.fail_on_inconclusive)
    return error is not None or verdict == "failed"


def suite_judges(options: ExecOptions) -> AbstractAsyncContextManager[SuiteJudges]:
    """The suite's judge clients and cache (left open: the suite closes them), else a run's own, closed after it."""
    if options.judges is not None:
        return nullcontext(options.judges)
    return _own_judges(options.root)


@asynccontextmanager
async def _own_judges(root: Path) -> AsyncIterator[SuiteJudges]:
    own = SuiteJudges(root, no_cache=True)  # outside a suite: this run's own clients, no cache
    try:
        yield own
    finally:
        with anyio.CancelScope(shield=True):
            await own.aclose()


def _usage_spend(state: RunState, options: ExecOptions, billed_to: Literal["agent", "judge"]) -> Spend:
    """The run's usage events billed to one side, as a `Spend`."""
    usage = usage_of(state.log.events, options.pricing, billed_to=billed_to)
    return Spend(
        calls=sum(1 for e in state.log.events if isinstance(e, UsageEvent) and e.billed_to == billed_to),
        tokens=usage.total_tokens,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cost=usage.cost,
        unpriced=list(usage.unpriced_models),
    )


def agent_spend_of(state: RunState, options: ExecOptions) -> Spend:
    """The agent's model calls (usage events billed to the agent)."""
    if not any(isinstance(e, UsageEvent) and e.billed_to == "agent" for e in state.log.events):
        return Spend()
    return _usage_spend(state, options, "agent")


def judge_spend_of(state: RunState, options: ExecOptions) -> Spend:
    """The judges' verdicts plus the calls niceeval made for the eval (follow-up detection)."""
    verdicts = spend_of(state.assertions)
    if not any(isinstance(e, UsageEvent) and e.billed_to == "judge" for e in state.log.events):
        return verdicts
    return verdicts + _usage_spend(state, options, "judge")


def after_input(fn: EvalFunction, text: str, is_async: bool) -> EvalFunction:
    """`fn`, run after `text` (a trace's input) is sent to the trace (the turn every assertion reads)."""
    if is_async:

        async def scored_async(t: Any) -> Any:
            await t.send(text)
            returned = fn(t)
            return await returned if hasattr(returned, "__await__") else returned

        return scored_async

    def scored(t: Any) -> Any:
        t.send(text)
        return fn(t)

    return scored
