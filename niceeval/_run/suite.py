"""Run a suite: plan the runs, execute them on a bounded pool of workers, stream results to reporters."""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import anyio

from niceeval._core.redact import Redactor, redacting
from niceeval._core.results import RunResult
from niceeval._core.stopping import was_terminated
from niceeval._core.summary import EvalTally, PlannedEval, Problem, SuiteSummary
from niceeval._core.threads import load_off_loop
from niceeval._run.cross_runs import CrossRuns
from niceeval._run.discovery import EvalEntry, LoadError
from niceeval._run.early_stop import RunControl
from niceeval._run.execute import ExecOptions, execute_run
from niceeval._run.judging import SuiteJudges, judging_modules
from niceeval._run.repeats import Repeats, RunQueue, first_runs, runs_of, work
from niceeval._run.watchdog import LoopWatchdog
from niceeval.providers import save_price_memo, shared_clients, use_price_memo
from niceeval.report import Reporter, ReporterSet
from niceeval.stats import AdaptiveRuns

if TYPE_CHECKING:
    from niceeval._run.shard import Shard  # `--shard` only: its class is not needed to run without one


@dataclass(frozen=True, kw_only=True, slots=True)
class SuiteOptions:
    """How the suite runs (from the command line and the config)."""

    runs: int = 1
    """Runs of each eval (`--runs N`), or the first runs of each with `adaptive` (LOW)."""
    adaptive: AdaptiveRuns | None = None
    """`--runs LOW..HIGH`: evals whose pass-rate interval straddles the gate run again, up to HIGH."""
    concurrency: int = 8
    strict: bool = False
    min_pass_rate: float = 1.0
    min_pass_at_k: tuple[int, float] | None = None
    """`--min-pass-at-k K:RATE`."""
    exec: ExecOptions
    done: frozenset[tuple[str, int]] = frozenset()
    """`(eval_id, run_index)` already run (`--resume`): not run again."""
    prior: Iterable[RunResult] = field(default=())
    """Their results (from the store), counted and shown as if run now; reporters see them first."""
    shard: Shard | None = None
    """`--shard I/N`: only the runs of this shard run (the entries are the evals with a run in it)."""
    budget: float | None = None
    """`--budget USD`: no new run starts once agent + judge spend reaches it."""
    exitfirst: bool = False
    """`-x/--exitfirst`: no new run starts once an eval has failed."""
    early_exit: bool = False
    """An experiment's `early_exit`: an eval's attempts run one after another and stop at its first pass."""


def select(entries: Sequence[EvalEntry], *, keyword: str | None = None, tags: Sequence[str] = ()) -> list[EvalEntry]:
    """Keep the evals that `keyword` (pytest's -k grammar over eval ids) matches and that carry any of `tags`."""
    chosen = list(entries)
    if keyword:
        from niceeval._run.keyword import compile_keyword  # -k's parser: imported only when asked for

        matches = compile_keyword(keyword)
        chosen = [e for e in chosen if matches(e.id)]
    if tags:
        wanted = set(tags)
        chosen = [e for e in chosen if wanted & set(e.tags)]
    return chosen


def agent_secrets(agent: object) -> list[str]:
    """Credentials an agent adapter was given in code (`api_key=`, auth headers), to keep them out of reports."""
    found = []
    key = getattr(getattr(agent, "options", None), "api_key", None)
    if isinstance(key, str):
        found.append(key)
    headers = getattr(agent, "headers", None)
    if isinstance(headers, dict):
        for name, value in headers.items():
            if isinstance(value, str) and (name.lower() == "authorization" or "key" in name.lower()):
                found.extend([value, value.removeprefix("Bearer ").strip()])
    return found


def _redactor(entries: Sequence[EvalEntry], options: SuiteOptions) -> Redactor:
    agents = [options.exec.agent, *(e.spec.agent for e in entries)]
    return Redactor.from_environment(extra=[secret for agent in agents for secret in agent_secrets(agent)])


def _plan(entries: Sequence[EvalEntry], runs: int, adaptive: AdaptiveRuns | None) -> list[PlannedEval]:
    return [
        PlannedEval(
            id=e.id, file=e.file, line=e.spec.line, tags=e.tags, runs=runs_of(e, runs), cluster=e.cluster,
            first_runs=first_runs(e, adaptive),
        )
        for e in entries
    ]  # fmt: skip


async def _rounds(
    queue: RunQueue,
    control: RunControl,
    worker: Callable[[], Coroutine[Any, Any, None]],
    count: int,
    flush: Callable[[], Awaitable[None]],
) -> None:
    """Run `count` workers until the queue is empty, then `flush` the runs held for comparisons across runs; again
    while repeats were queued after the workers stopped."""
    while True:
        async with anyio.create_task_group() as tg:
            for _ in range(count):
                tg.start_soon(worker)
        await flush()
        if not queue.refilled or control.stopped is not None:
            return


async def _release_sandboxes() -> None:
    """Containers kept for reuse across attempts end with the suite (only looked for when sandbox evals ran)."""
    sandboxing = sys.modules.get("niceeval._run.sandboxing")
    if sandboxing is not None:
        await sandboxing.close_sandboxes()


async def run_suite(
    entries: Sequence[EvalEntry],
    load_errors: Sequence[LoadError],
    options: SuiteOptions,
    reporters: Sequence[Reporter],
) -> SuiteSummary:
    """Execute every planned run and return the summary; reporters see each run as it finishes.

    Memory stays flat in the number of evals: runs are pulled one at a time by `concurrency` workers,
    and only per-eval tallies are kept here.
    """
    plan = _plan(entries, options.runs, options.adaptive)
    tallies = {p.id: EvalTally(eval=p) for p in plan}
    redactor = _redactor(entries, options)
    problems = [
        Problem(location=f"{e.file}:{e.line}" if e.line else e.file, message=redactor.text(e.message))
        for e in load_errors
    ]
    gate = {"gate": options.min_pass_rate, "strict": options.strict}
    repeats = Repeats.plan(options.adaptive, entries, options.done, **gate)
    repeats.planned(plan, options.done)
    sinks = ReporterSet(reporters)
    sinks.start(plan, problems)
    queue = RunQueue(work(entries, options.runs, options.done, options.shard, in_order=options.early_exit))
    started = time.perf_counter()
    summary = SuiteSummary(
        tallies=list(tallies.values()),
        problems=problems,
        duration_s=0.0,
        strict=options.strict,
        min_pass_rate=options.min_pass_rate,
        min_pass_at_k=options.min_pass_at_k,
        interrupted=True,
        adaptive_most=options.adaptive.most if options.adaptive else None,
    )

    control = RunControl(budget=options.budget, exitfirst=options.exitfirst, early_exit=options.early_exit)

    def record(finished: RunResult) -> None:
        result = redactor.run(finished)
        tallies[result.eval_id].add(result)
        repeats.again(tallies[result.eval_id], queue)
        if (stop_problem := control.after(result, tallies[result.eval_id], summary)) is not None:
            problems.append(stop_problem)
        if result.error is not None and result.error.kind == "usage":
            problem = Problem(location=result.error.location or result.file, message=result.error.message, kind="usage")
            if problem not in problems:  # the same mistake in every one of --runs N is one problem
                problems.append(problem)
        sinks.run_finished(result)

    async def flush() -> None:
        for ready in await cross.flush():
            record(ready)  # a run held for a comparison across runs may queue a repeat

    async def worker(exec_options: ExecOptions, cross: CrossRuns) -> None:
        for entry, index in control.runs(queue):
            sinks.run_started(entry.id, index)
            result, comparisons = await execute_run(entry, index, exec_options)
            for ready in await cross.finished(entry, result, comparisons):
                record(ready)

    for result in options.prior:
        if result.eval_id in tallies:
            tallies[result.eval_id].add(result)
            repeats.again(tallies[result.eval_id], queue)
            control.settle(result, tallies[result.eval_id])  # a carried pass settles an early-exit eval
            sinks.run_finished(result)
    judges = SuiteJudges(options.exec.root, no_cache=options.exec.no_cache, cache_only=options.exec.cache_only)
    use_price_memo(options.exec.root)  # .niceeval/prices.json: the prices this project's models resolved to, kept
    exec_options = replace(options.exec, judges=judges)
    await load_off_loop(*judging_modules(entries))  # before the evals start: nothing of ours imports on the loop
    watchdog = LoopWatchdog(entries)
    cross = CrossRuns(entries, exec_options)
    try:
        async with shared_clients():
            try:
                async with watchdog.watching():
                    workers = min(options.concurrency, sum(p.runs for p in plan))
                    with redacting(redactor):  # what a run shortens is first scrubbed of the suite's secrets too
                        await _rounds(queue, control, lambda: worker(exec_options, cross), workers, flush)
                control.count_left(queue)
                summary.runs_saved = repeats.saved(summary.tallies)
                summary.stopped, summary.not_started = control.stopped, control.not_started
            finally:
                with anyio.CancelScope(shield=True):
                    await judges.aclose()  # inside the client scope: the judges' clients are the shared ones
        summary.interrupted = False
    finally:
        save_price_memo()  # the models first priced in this suite, if any (a small file, written once)
        use_price_memo(None)
        summary.duration_s = time.perf_counter() - started
        summary.terminated = summary.interrupted and was_terminated()
        with anyio.CancelScope(shield=True):
            await sinks.drain()  # the store's last runs, written from the loop (PostgreSQL)
            await _release_sandboxes()
        sinks.finish(summary)
    return summary
