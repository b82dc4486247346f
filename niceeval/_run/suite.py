"""Run a suite: plan the runs, execute them on a bounded pool of workers, stream results to reporters."""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from niceeval._core.failure import DEFAULT_INFRA_RETRIES
from niceeval._core.redact import Redactor, redacting
from niceeval._core.results import RunResult
from niceeval._core.stopping import was_terminated
from niceeval._core.suite_totals import SuiteTotals
from niceeval._core.summary import EvalTally, Plan, PlannedEval, Problem, SuiteSummary
from niceeval._core.threads import load_off_loop
from niceeval._eval.compare import Comparison
from niceeval._run.cross_runs import CrossRuns
from niceeval._run.discovery import EvalEntry, LoadError
from niceeval._run.early_stop import RunControl
from niceeval._run.execute import ExecOptions, execute_run
from niceeval._run.failures import retried
from niceeval._run.judging import SuiteJudges, judging_modules
from niceeval._run.plan import EvalStream
from niceeval._run.repeats import Repeats, RunQueue, WorkItem, first_runs, runs_of, work
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
    infra_retries: int = DEFAULT_INFRA_RETRIES
    """`--infra-retries N`: times a run that failed for `infra` runs again before it is reported."""
    stop_after_infra: int | None = None
    """`--stop-after-infra N`: the suite stops after N runs in a row failed for `infra`."""
    early_exit: bool = False
    """An experiment's `early_exit`: an eval's attempts run one after another and stop at its first pass."""


def select(entries: Iterable[EvalEntry], *, keyword: str | None = None, tags: Sequence[str] = ()) -> EvalStream:
    """Keep the evals that `keyword` (pytest's -k grammar over eval ids) matches and that carry any of `tags`: a
    stream, filtered as it is read."""
    chosen = EvalStream.of(entries)
    if keyword:
        from niceeval._run.keyword import compile_keyword  # -k's parser: imported only when asked for

        matches = compile_keyword(keyword)
        chosen = chosen.filtered(lambda e: matches(e.id))
    if tags:
        wanted = set(tags)
        chosen = chosen.filtered(lambda e: bool(wanted & set(e.tags)))
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


def _redactor(entries: Iterable[EvalEntry], options: SuiteOptions) -> Redactor:
    agents = [options.exec.agent, *(e.spec.agent for e in entries)]
    return Redactor.from_environment(extra=[secret for agent in agents for secret in agent_secrets(agent)])


@dataclass(kw_only=True)
class _Survey:
    """What the suite needs before its first run, from one pass over the planned evals (the stream is read again
    for the runs): nothing here grows with a dataset's cases (but the count of each case's variants)."""

    runs: int
    """`--runs N`, or LOW."""
    adaptive: AdaptiveRuns | None
    count: int = 0
    """The planned evals."""
    runs_total: int = 0
    """The runs they plan at first."""
    planned: dict[str, PlannedEval] = field(default_factory=dict)
    """The plan records of the evals held (below): adaptive repeats raise their runs, and the store reads them."""
    functions: list[EvalEntry] = field(default_factory=list)
    """One eval per eval function (their agents' secrets, the judge's modules, the loop watchdog read these)."""
    held: list[EvalEntry] = field(default_factory=list)
    """The evals that run as a group (eval-group members) or may repeat (adaptive runs): held for the suite."""
    variants: Counter[str] = field(default_factory=Counter)
    """How many variants of each case are planned (max-score and select-best wait for all of them)."""
    shared: Counter[str] = field(default_factory=Counter)
    """How many planned evals share each cluster that is not one eval's own (a case's variants, a `cluster=`
    key): the suite's figures hold such a cluster's sums until its last eval is done (`SuiteTotals`)."""
    clustered: bool = False
    """Whether some eval's cluster is not its own."""

    def planned_of(self, e: EvalEntry) -> PlannedEval:
        """The eval's plan record: the one held for it, or a new one (made again at each pass)."""
        return self.planned.get(e.id) or PlannedEval(
            id=e.id, file=e.file, line=e.spec.line, tags=e.tags, runs=runs_of(e, self.runs), cluster=e.cluster,
            first_runs=first_runs(e, self.adaptive),
        )  # fmt: skip


def _survey(entries: Iterable[EvalEntry], runs: int, adaptive: AdaptiveRuns | None) -> _Survey:
    survey = _Survey(runs=runs, adaptive=adaptive)
    seen: set[int] = set()
    for e in entries:
        survey.count += 1
        survey.runs_total += runs_of(e, runs)
        if id(e.spec) not in seen:
            seen.add(id(e.spec))
            survey.functions.append(e)
        if e.eval_group is not None or (adaptive is not None and e.spec.runs is None):
            survey.held.append(e)
            survey.planned[e.id] = survey.planned_of(e)
        if e.group is not None:
            survey.variants[e.group] += 1
        if (cluster := e.cluster) != e.id:
            survey.shared[cluster] += 1
            survey.clustered = True
    return survey


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


Grouped = Callable[[EvalEntry, int], list[EvalEntry]]
"""An eval group's members (selected, planned) with a run to make at a run index, in the group's order."""


def _grouped(entries: Iterable[EvalEntry], done: frozenset[tuple[str, int]]) -> Grouped:
    members: dict[str, list[EvalEntry]] = {}
    for entry in entries:
        if (key := entry.eval_group_key) is not None:
            members.setdefault(key, []).append(entry)

    def of(entry: EvalEntry, index: int) -> list[EvalEntry]:
        return [m for m in members[entry.eval_group_key or ""] if (m.id, index) not in done]

    return of


async def _run_item(
    entry: EvalEntry,
    index: int,
    options: ExecOptions,
    grouped: Grouped,
    started: Callable[[str, int], None],
    cross: CrossRuns,
    infra_retries: int,
    going_on: Callable[[], bool],
) -> list[RunResult]:
    """Run one work item (a run of an eval, or an attempt of its eval group: every member, in order); the runs
    ready to report (a run waiting for the other variants of its case is held by `cross`).

    A lone eval's run failed for `infra` is run again (up to `infra_retries` more times, while `going_on()`); an
    eval group's attempt is not: its members build on each other in one sandbox.
    """
    finished: list[tuple[EvalEntry, RunResult, list[Comparison]]]
    if entry.eval_group is None:
        started(entry.id, index)
        result, comparisons = await retried(partial(execute_run, entry, index, options), infra_retries, going_on)
        finished = [(entry, result, comparisons)]
    else:
        from niceeval._run.eval_groups import run_group_attempt  # only suites with eval groups load it

        runs = await run_group_attempt(entry.eval_group, grouped(entry, index), index, options, started)
        finished = [(run.entry, run.result, run.comparisons) for run in runs]
    return [
        ready for member, result, comparisons in finished for ready in await cross.finished(member, result, comparisons)
    ]


class _Tallies:
    """The tallies of the evals with a run started and not yet done: an eval's is made (with its plan record)
    when its first run starts and folded into the summary (then dropped) when its last run is reported, so what
    the suite holds does not grow with its evals (the adaptive evals' runs made are kept for `runs_saved`)."""

    def __init__(self, survey: _Survey, summary: SuiteSummary, sinks: ReporterSet) -> None:
        self._survey = survey
        self._summary = summary
        self._sinks = sinks
        self.open: dict[str, EvalTally] = {}
        self.made: dict[str, int] = {}
        """Runs made by the adaptive evals (`Repeats.entries`) folded so far."""

    def planned(self, eval_id: str) -> PlannedEval | None:
        """The plan record of an eval under way, or held by the suite (the plan's lookup)."""
        tally = self.open.get(eval_id)
        return tally.eval if tally is not None else self._survey.planned.get(eval_id)

    def record_of(self, entry: EvalEntry) -> PlannedEval:
        """A new plan record for `entry` (as the plan makes at each pass)."""
        return self._survey.planned_of(entry)

    def begin(self, planned: PlannedEval) -> EvalTally:
        """The eval's tally, made on first asking."""
        tally = self.open.get(planned.id)
        if tally is None:
            tally = self.open[planned.id] = EvalTally(eval=planned)
        return tally

    def of(self, eval_id: str) -> EvalTally:
        """The tally of an eval under way (or held: an eval group's members start within their group's item)."""
        tally = self.open.get(eval_id)
        return tally if tally is not None else self.begin(self._survey.planned[eval_id])

    def carried(
        self, result: RunResult, planned: PlannedEval, repeats: Repeats, queue: RunQueue, control: RunControl
    ) -> None:
        """A run made before (`--resume`, an experiment's carried attempt), counted as if made now."""
        tally = self.begin(planned)
        tally.add(result)
        repeats.again(tally, queue)
        control.settle(result, tally)  # a carried pass settles an early-exit eval
        self.reported(result, tally, repeats)

    def started(self, eval_id: str, run_index: int) -> None:
        """A run began: its eval gets its tally (one cut short before a run finished is still reported)."""
        self.of(eval_id)
        self._sinks.run_started(eval_id, run_index)

    def reported(self, result: RunResult, tally: EvalTally, repeats: Repeats) -> None:
        """The reporters are given `result` (already added to `tally`); when it was its eval's last run (a repeat
        is queued before, raising the count), those that write an eval when it is done are told, and the tally is
        folded."""
        self._sinks.run_finished(result)
        if tally.done != tally.eval.runs:
            return
        self._sinks.eval_finished(tally, self._summary)
        self._summary.totals.add(tally)
        if tally.eval.id in repeats.entries:
            self.made[tally.eval.id] = tally.done
        del self.open[tally.eval.id]

    def close(self, repeats: Repeats) -> None:
        """The suite ended: the evals not done are folded as they are, and kept for the reporters' `finish`; the
        runs adaptive repeats saved are counted (when it was not interrupted)."""
        for tally in self.open.values():
            self._summary.totals.add(tally)
            if tally.eval.id in repeats.entries:
                self.made[tally.eval.id] = tally.done
        self._summary.totals.close()
        self._summary.unfinished = list(self.open.values())
        if not self._summary.interrupted:
            self._summary.runs_saved = repeats.saved(self.made)


def _left(queue: RunQueue, tallies: _Tallies) -> Iterator[WorkItem]:
    """The work no worker took, each eval given a tally with no run (reports list every planned eval)."""
    for entry, indices in queue:
        tallies.begin(tallies.planned(entry.id) or tallies.record_of(entry))
        yield entry, indices


def _carry(
    prior: Iterable[RunResult], plan: Plan, tallies: _Tallies, going: tuple[Repeats, RunQueue, RunControl]
) -> None:
    """Count the runs made before (`--resume`, an experiment's carried attempts) as if made now: their evals'
    plan records are found in one pass over the plan (only when there are such runs)."""
    carried = list(prior)
    if not carried:
        return
    wanted = {result.eval_id for result in carried}
    records = {planned.id: planned for planned in plan if planned.id in wanted}
    for result in carried:
        if (planned := tallies.planned(result.eval_id) or records.get(result.eval_id)) is not None:
            tallies.carried(result, planned, *going)


def _summary(survey: _Survey, options: SuiteOptions, problems: list[Problem]) -> SuiteSummary:
    """The summary the suite folds its evals into as they finish (`interrupted` until it ends normally)."""
    totals = SuiteTotals(
        strict=options.strict,
        min_pass_rate=options.min_pass_rate,
        min_pass_at_k=options.min_pass_at_k,
        planned=survey.count,
        clustered=survey.clustered,
        shared=survey.shared,
    )
    adaptive_most = options.adaptive.most if options.adaptive else None
    return SuiteSummary(totals=totals, problems=problems, duration_s=0.0, interrupted=True, adaptive_most=adaptive_most)


async def run_suite(
    entries: Iterable[EvalEntry],
    load_errors: Sequence[LoadError],
    options: SuiteOptions,
    reporters: Sequence[Reporter],
) -> SuiteSummary:
    """Execute every planned run and return the summary; reporters see each run as it finishes.

    `entries` is read twice, as a stream (`EvalStream`; a list will do): once to plan, once as the runs are
    pulled one at a time by `concurrency` workers. Only a small record per planned eval is kept here, a tally per
    eval with runs under way (folded into the summary when its last run is reported: `_Tallies`), and the evals
    that run as a group or may repeat (see `_Survey`).
    """
    entries = EvalStream.of(entries)
    survey = _survey(entries, options.runs, options.adaptive)
    redactor = _redactor(survey.functions, options)
    problems = [
        Problem(location=f"{e.file}:{e.line}" if e.line else e.file, message=redactor.text(e.message))
        for e in load_errors
    ]
    gate = {"gate": options.min_pass_rate, "strict": options.strict}
    repeats = Repeats.plan(options.adaptive, survey.held, options.done, **gate)
    repeats.planned(list(survey.planned.values()), options.done)
    sinks = ReporterSet(reporters)
    summary = _summary(survey, options, problems)
    tallies = _Tallies(survey, summary, sinks)
    held = survey.planned.values()  # the reporters read each eval's running tally (`Plan.tally`), counted once
    plan = Plan(lambda: map(survey.planned_of, entries), survey.count, tallies.planned, held, tallies.open.get)
    sinks.start(plan, problems)
    queue = RunQueue(work(entries, options.runs, options.done, options.shard, in_order=options.early_exit))
    started = time.perf_counter()

    sizes = Counter(key for e in survey.held if (key := e.eval_group_key) is not None)
    control = RunControl(
        budget=options.budget,
        exitfirst=options.exitfirst,
        group_sizes=sizes,
        stop_after_infra=options.stop_after_infra,
        early_exit=options.early_exit,
    )

    def record(finished: RunResult) -> None:
        result = redactor.run(finished)
        tally = tallies.of(result.eval_id)
        tally.add(result)
        repeats.again(tally, queue)
        if (stop_problem := control.after(result, tally, summary)) is not None:
            problems.append(stop_problem)
        if result.error is not None and result.error.kind == "usage":
            problem = Problem(location=result.error.location or result.file, message=result.error.message, kind="usage")
            if problem not in problems:  # the same mistake in every one of --runs N is one problem
                problems.append(problem)
        tallies.reported(result, tally, repeats)

    async def flush() -> None:
        for ready in await cross.flush():
            record(ready)  # a run held for a comparison across runs may queue a repeat

    grouped = _grouped(survey.held, options.done)

    async def worker(exec_options: ExecOptions, cross: CrossRuns) -> None:
        for entry, index in control.runs(queue):
            tallies.begin(tallies.planned(entry.id) or tallies.record_of(entry))
            item = await _run_item(
                entry, index, exec_options, grouped, tallies.started, cross, options.infra_retries, control.going_on
            )
            for ready in item:
                record(ready)

    _carry(options.prior, plan, tallies, (repeats, queue, control))
    judges = SuiteJudges(options.exec.root, no_cache=options.exec.no_cache, cache_only=options.exec.cache_only)
    use_price_memo(options.exec.root)  # .niceeval/prices.json: the prices this project's models resolved to, kept
    exec_options = replace(options.exec, judges=judges)
    await load_off_loop(
        *judging_modules(survey.functions)
    )  # before the evals start: nothing of ours imports on the loop
    watchdog = LoopWatchdog(survey.functions)
    cross = CrossRuns(survey.variants, exec_options)
    try:
        async with shared_clients():
            try:
                async with watchdog.watching():
                    workers = min(options.concurrency, survey.runs_total)
                    with redacting(redactor):  # what a run shortens is first scrubbed of the suite's secrets too
                        await _rounds(queue, control, lambda: worker(exec_options, cross), workers, flush)
                control.count_left(_left(queue, tallies))
                summary.stopped, summary.not_started = control.stopped, control.not_started
                summary.halted = control.halted
            finally:
                with anyio.CancelScope(shield=True):
                    await judges.aclose()  # inside the client scope: the judges' clients are the shared ones
        summary.interrupted = False
    finally:
        save_price_memo()  # the models first priced in this suite, if any (a small file, written once)
        use_price_memo(None)
        summary.duration_s = time.perf_counter() - started
        summary.terminated = summary.interrupted and was_terminated()
        tallies.close(repeats)
        with anyio.CancelScope(shield=True):
            await sinks.drain()  # the store's last runs, written from the loop (PostgreSQL)
            await _release_sandboxes()
        sinks.finish(summary)
    return summary
