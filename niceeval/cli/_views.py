"""What `niceeval runs` and `niceeval show` print, rebuilt from the results store."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from rich.console import Console

from niceeval._core.results import RunResult
from niceeval._core.suite_totals import SuiteTotals
from niceeval._core.summary import EvalTally, Plan, PlannedEval, Problem, SuiteSummary
from niceeval._core.text import clean
from niceeval._core.wording import share, usd
from niceeval.report import ConsoleReporter, JsonReporter, JUnitReporter, Reporter, ReporterSet
from niceeval.report.json_report import run_json
from niceeval.store import RunDiff, RunNotFound, Store, StoredRun, SuiteRunDetail, SuiteRunInfo

if TYPE_CHECKING:
    from niceeval.render import JudgeModelUse


def _when(info: SuiteRunInfo) -> str:
    return info.started_at.astimezone().strftime("%Y-%m-%d %H:%M")


def _commit(info: SuiteRunInfo) -> str:
    if not info.git_commit:
        return "-"
    return info.git_commit[:8] + ("*" if info.git_dirty else "")


def _cost(info: SuiteRunInfo) -> str:
    return usd(info.cost)


def _shards_in(info: SuiteRunInfo) -> str:
    return f"{info.shards_done} of {info.shard_count} shards in"


def _header(info: SuiteRunInfo) -> str:
    """The line above a stored suite run's report: id, when, commit and branch, status, shards."""
    branch = f" ({info.git_branch})" if info.git_branch else ""
    shards = ""
    if info.shard_count is not None and info.shard_count > 1:
        shards = f" · {_shards_in(info)}" if info.shards_pending else f" · {info.shard_count} shards"
    return f"run {info.id} · {_when(info)} · commit {_commit(info)}{branch} · {info.status}{shards}{missing_runs(info)}"


def missing_runs(info: SuiteRunInfo) -> str:
    """` · N of M eval runs missing` for a suite run that has not stored all it planned (else nothing)."""
    missing = info.runs_planned - info.runs_done
    if info.status == "finished" or missing <= 0:
        return ""
    return f" · {missing} of {info.runs_planned} eval runs missing (`niceeval run --resume {info.id}` runs them)"


def runs_table(runs: Sequence[SuiteRunInfo], rates: Mapping[str, float | None] | None = None) -> list[str]:
    """One line per suite run: id, when, commit, evals passed/scored/failed/skipped, pass rate (over runs, from
    `rates`: `Store.pass_rates`), cost, duration."""
    lines = [
        f"{'RUN':<12}  {'STARTED':<16}  {'COMMIT':<9}  {'PASS/SCORED/FAIL/SKIP':<22}  {'RATE':>5}  "
        f"{'COST':>9}  {'TIME':>8}  STATUS"
    ]
    for info in runs:
        counts = f"{info.passed}/{info.scored}/{info.failed}/{info.skipped}"
        run_rate = (rates or {}).get(info.id, info.pass_rate)
        rate = "-" if run_rate is None else share(run_rate)
        took = "-" if info.duration_s is None else f"{info.duration_s:.1f}s"
        status = info.status + (f" ({info.runs_done}/{info.runs_planned} runs)" if info.status != "finished" else "")
        if info.shards_pending:
            status += f", {_shards_in(info)}"
        if info.parent_id:
            status += f", {info.kind} of {info.parent_id}"
        elif info.kind != "run":
            status += f", {info.kind}"  # `pytest`, `calibrate`: recorded by another command than `niceeval run`
        if info.experiment is not None:
            status += f", experiment {info.experiment}"
        lines.append(
            f"{info.id:<12}  {_when(info):<16}  {_commit(info):<9}  {counts:<22}  {rate:>5}  {_cost(info):>9}  "
            f"{took:>8}  {status}"
        )
    if len(lines) == 1:
        lines.append("(no suite runs yet: `niceeval run` records one)")
    return lines


REPORT_MOST_EVALS = 200
"""Evals `niceeval report` prints on the console: the first 200, then failed ones up to 200 failures; a run of
100,000 evals would print 100,000 lines (the report files list every one)."""


class _StoredRecords:
    """The JSON report's record of the run being replayed: the one `Store.stored_runs` made from its rows."""

    def __init__(self) -> None:
        self.current: StoredRun | None = None

    def __call__(self, result: RunResult) -> bytes:
        current = self.current
        if current is not None and current.result is result and current.json is not None:
            return current.json
        return run_json(result)

    def runs(self, store: Store, suite_run_id: str, *, records: bool) -> Iterator[Replayed]:
        """The suite run's eval runs for the reporters, each one's record kept while they take it (`records`: a
        JSON report is written, so the records are made)."""
        for stored in store.stored_runs(suite_run_id, records=records):
            self.current = stored
            yield Replayed(stored.result, stored.planned, stored.position or 0)
        self.current = None


class Replayed(NamedTuple):
    """A stored eval run handed to `_replay`, with its eval as the suite run planned it."""

    result: RunResult
    planned: PlannedEval | None
    """None: the plan does not name the eval (the run is left out)."""
    position: int
    """The eval's place in the plan."""


def with_plan(results: Iterable[RunResult], plan: Sequence[PlannedEval]) -> Iterator[Replayed]:
    """Runs read in full (`Store.results`), each with its planned eval looked up in `plan` (held: `niceeval show`)."""
    planned = {p.id: (position, p) for position, p in enumerate(plan)}
    for result in results:
        position, found = planned.get(result.eval_id, (0, None))
        yield Replayed(result, found, position)


def _replay(
    runs: Iterable[Replayed],
    info: SuiteRunInfo,
    plan: Sequence[PlannedEval],
    reporters: Sequence[Reporter],
    *,
    shared: Counter[str],
    one: bool = False,
) -> SuiteSummary:
    """Hand a stored suite run to reporters as if it ran now: plan, every stored eval run (`runs`, in the order they
    were stored: the order they finished, each with its planned eval), each eval done once its last run is in (as
    the suite tells them, so the JSON report lists its evals in the same order), the summary.

    The reporters get the plan as a live suite hands its own (`Plan`): walked again when read, each eval and its
    running tally looked up while its runs are under way (each run is counted once, here: the reporters read this
    tally, `ReporterTallies`). So a replay keeps no record per planned eval (`report` walks the stored plan:
    `Store.walk_planned`), only a byte per eval: whether it is done.

    `shared`: the planned evals of each cluster shared by evals (`shared_clusters`). `one`: the plan is one eval
    picked from the suite run (the suite's load errors are left out). Returns the summary the reporters were given
    (its exit code is the one `niceeval run` would have had).
    """
    tallies: dict[str, EvalTally] = {}
    """The evals with a run in and runs to come: a done eval is folded into `totals`, as the suite folds it."""

    def under_way(eval_id: str) -> PlannedEval | None:
        tally = tallies.get(eval_id)
        return None if tally is None else tally.eval

    sinks = ReporterSet(reporters)
    sinks.start(Plan(plan.__iter__, len(plan), under_way, tallies=tallies.get), [])
    totals = _totals(info, plan, shared)

    def summed(unfinished: list[EvalTally]) -> SuiteSummary:
        return SuiteSummary(
            totals=totals,
            unfinished=unfinished,
            problems=[Problem(location=e["location"], message=e["message"]) for e in info.errors] if not one else [],
            duration_s=info.duration_s or 0.0,
            interrupted=info.status == "interrupted",
            missing_runs=0 if info.status == "finished" or one else max(0, info.runs_planned - info.runs_done),
        )

    gates = summed([])  # the gates an eval is judged by while the runs come in, as a live suite's summary
    done = bytearray(len(plan))
    """1 at the plan position of each eval done: a byte an eval, not a set of ids."""
    evals_done = 0
    for result, planned, position in runs:
        tally = tallies.get(result.eval_id)
        if tally is None:
            if planned is None or _is_done(done, position):
                continue
            tally = tallies[result.eval_id] = EvalTally(eval=planned)
        tally.add(result)
        sinks.run_finished(result)
        if tally.done == tally.eval.runs:
            sinks.eval_finished(tally, gates)
            totals.add(tally)
            if position >= len(done):  # a plan that grew while it was read (a shard extending it)
                done.extend(bytes(position + 1 - len(done)))
            done[position] = 1
            evals_done += 1
            del tallies[result.eval_id]
    unfinished = (
        []
        if evals_done == len(plan)
        else [tallies.get(p.id) or EvalTally(eval=p) for n, p in enumerate(plan) if not _is_done(done, n)]
    )
    for tally in unfinished:
        totals.add(tally)
    totals.close()
    summary = summed(unfinished)
    sinks.finish(summary)
    return summary


def _is_done(done: bytearray, position: int) -> bool:
    """Whether the eval at this plan position is done (a plan read while a shard extends it may be longer)."""
    return position < len(done) and done[position] == 1


def shared_clusters(plan: Iterable[PlannedEval]) -> Counter[str]:
    """The planned evals of each cluster that is not an eval itself (`Store.shared_clusters` of a stored plan)."""
    return Counter(p.cluster for p in plan if p.cluster is not None and p.cluster != p.id)


def _totals(info: SuiteRunInfo, plan: Sequence[PlannedEval], shared: Counter[str]) -> SuiteTotals:
    """The suite run's figures, empty: its evals are folded in as they are done (`SuiteTotals`)."""
    return SuiteTotals(
        strict=info.strict,
        min_pass_rate=info.min_pass_rate,
        planned=len(plan),
        clustered=bool(shared),
        shared=shared,
    )


class _Keep:
    """A sink that keeps the runs of one eval, to print them in full after the report."""

    def __init__(self) -> None:
        self.runs: list[RunResult] = []

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        del plan, problems

    def run_finished(self, result: RunResult) -> None:
        self.runs.append(result)

    def finish(self, summary: SuiteSummary) -> None:
        del summary


def show_run(store: Store, ref: str, eval_id: str | None, console: Console) -> None:
    """The console report of a stored suite run, as `niceeval run` printed it; with `eval_id`, that eval in full."""
    info = store.run(ref).run
    plan = store.planned(info.id)
    if eval_id is not None:
        plan = [p for p in plan if p.id == eval_id]
        if not plan:
            raise RunNotFound(f"suite run {info.id} has no eval {eval_id!r}; `niceeval show {info.id}` lists them.")
    console.file.write(_header(info) + "\n")
    kept = _Keep()
    reporter = ConsoleReporter(console, strict=info.strict, min_pass_rate=info.min_pass_rate)
    only = [eval_id] if eval_id is not None else None
    runs = with_plan(store.results(info.id, eval_ids=only), plan)
    sinks: list[Reporter] = [reporter, kept] if eval_id else [reporter]
    _replay(runs, info, plan, sinks, shared=shared_clusters(plan), one=eval_id is not None)
    for result in sorted(kept.runs, key=lambda r: r.run_index):
        _print_record(result, console)


def export_reports(
    store: Store, ref: str, *, json_path: Path | None, junit_path: Path | None, html_path: Path | None = None
) -> str:
    """Write a stored suite run's JSON, JUnit and/or HTML report (as `niceeval run` would have); returns its id."""
    info = store.info(ref)
    _report_stored(store, info, [], ReportFiles(json_path, junit_path, html_path))
    return info.id


@dataclass(frozen=True, slots=True)
class ReportFiles:
    """The report files asked for (None: not written)."""

    json: Path | None = None
    junit: Path | None = None
    html: Path | None = None


def _report_stored(store: Store, info: SuiteRunInfo, reporters: Sequence[Reporter], files: ReportFiles) -> SuiteSummary:
    """Replay a stored suite run into `reporters` and the report files, read from its rows (`Store.stored_runs`).

    The HTML page shows each run's conversation and judge calls, which the rows' light `RunResult`s leave out: it
    tallies the light runs with the others and reads the runs of the evals it lists again in full (`_StoredDetail`).
    """
    from niceeval._run.gc_pacing import paced_collection

    plan = Plan(lambda: store.walk_planned(info.id), store.planned_count(info.id), _nothing_under_way)
    records = _StoredRecords()
    files_written: list[Reporter] = []
    if files.json is not None:
        files_written.append(JsonReporter(files.json, run_id=info.id, record=records))
    if files.junit is not None:
        files_written.append(JUnitReporter(files.junit, strict=info.strict, min_pass_rate=info.min_pass_rate))
    if files.html is not None:
        files_written.append(html_reporter(store, info, files.html))
    with paced_collection():  # the plan frozen out of the collector's passes, as a suite's is
        runs = records.runs(store, info.id, records=files.json is not None)
        shared = Counter(store.shared_clusters(info.id))
        summary = _replay(runs, info, plan, [*reporters, *files_written], shared=shared)
    return summary


def _nothing_under_way(eval_id: str) -> None:
    """A stored plan's lookup before its replay: no eval is under way."""
    del eval_id


def html_reporter(store: Store, info: SuiteRunInfo, path: Path) -> Reporter:
    """The HTML reporter for a stored suite run: its id and start time in the page, the runs it lists read in full
    from the store (feed it the light runs with `_replay`)."""
    from niceeval.report.html import HtmlReporter  # Jinja2 and the templates only when a page is written

    return HtmlReporter(path, run_id=info.id, started_at=info.started_at, stored=_StoredDetail(store, info))


class _StoredDetail:
    """What the HTML report of a stored suite run reads beyond its light runs (`report.html.StoredRuns`)."""

    def __init__(self, store: Store, info: SuiteRunInfo) -> None:
        self.store = store
        self.info = info

    def runs(self, eval_ids: Sequence[str]) -> list[RunResult]:
        """Every stored run of these evals, in full."""
        return list(self.store.results(self.info.id, eval_ids=eval_ids))

    def judge_models(self) -> list[JudgeModelUse]:
        """The suite run's judge calls per model, as its closing kept them (counted from its rows while it runs)."""
        from niceeval.render import JudgeModelUse
        from niceeval.store.tables import run_judging

        with self.store.engine.connect() as conn:
            found = run_judging(conn, self.info.id, running=self.info.status == "running")
        return [JudgeModelUse.of_row(row) for row in found["models"]]


def report_run(
    store: Store,
    ref: str,
    console: Console,
    *,
    json_path: Path | None = None,
    junit_path: Path | None = None,
    html_path: Path | None = None,
    more: Callable[[SuiteRunInfo], Sequence[Reporter]] | None = None,
) -> int:
    """`niceeval report`: a whole suite run (every shard's runs) on the console, and to the report files asked for.

    `more` gives further reporters for the run (GitHub output), built once the run is known.

    Returns the exit code `niceeval run` would have had over the whole suite run. One that has not finished (a
    shard missing, or a process killed) says what is missing and returns 1 at least: a CI job gating on it never
    passes on part of the results.
    """
    info = store.info(ref)  # the header alone: a run of 100,000 evals is read once, by the replay
    extra = list(more(info)) if more is not None else []
    console.file.write(_header(info) + "\n")
    console_report = ConsoleReporter(
        console, strict=info.strict, min_pass_rate=info.min_pass_rate, most_evals=REPORT_MOST_EVALS
    )
    summary = _report_stored(store, info, [console_report, *extra], ReportFiles(json_path, junit_path, html_path))
    if info.status == "finished":
        return summary.exit_code
    console.file.write(_incomplete(store.run(info.id)) + "\n")
    return summary.exit_code or 1


def _incomplete(detail: SuiteRunDetail) -> str:
    info = detail.run
    stored = f"{info.runs_done} of {info.runs_planned} eval runs stored"
    if info.shards_pending:
        missing = ", ".join(f"shard {shard}" for shard in detail.missing_shards)
        return (
            f"incomplete: {_shards_in(info)} (missing: {missing}); {stored}. Run a missing shard's command "
            f"(--run-id {info.id}) to add it; a shard that did not finish completes its missing eval runs."
        )
    resume = f"`niceeval run --resume {info.id}` completes it"
    return f"incomplete: suite run {info.id} is {info.status}; {stored} ({resume})."


_MARKS = {"regression": "REGRESSED", "improvement": "improved", "noise": "noise"}


def diff_lines(diff: RunDiff) -> list[str]:
    """`niceeval diff` as text: what else differed, changes by evidence, the suite's paired test, the verdict."""
    rule = f"{'--strict ' if diff.strict else ''}--min-pass-rate {diff.min_pass_rate:g}"
    lines = [f"diff {diff.base} -> {diff.head} (both judged with {rule})"]
    lines += [f"  differs: {clean(d.what, 40)}: {clean(d.base, 200)} -> {clean(d.head, 200)}" for d in diff.differences]
    for change in diff.changed:
        mark = _MARKS.get(change.change, "changed")
        counts = f"{change.base_passes}/{change.base_runs} -> {change.head_passes}/{change.head_runs} runs passed"
        lines.append(
            f"  {mark:<10} {clean(change.eval_id, 200)}  {change.base} -> {change.head}  {counts}: "
            f"{clean(change.evidence, 200)}" + (f" (q={change.q_value:.3g})" if change.q_value is not None else "")
        )
    lines += [f"  {'new':<10} {clean(eval_id, 200)}" for eval_id in diff.new]
    lines += [f"  {'gone':<10} {clean(eval_id, 200)}" for eval_id in diff.gone]
    for score in diff.scores:
        lines.append(
            f"  {'score':<10} {clean(score.eval_id, 200)}  {clean(score.assertion, 120)}  "
            f"{score.base:.2f} -> {score.head:.2f} ({score.delta:+.2f})"
        )
    if diff.suite is not None:
        rates = f"{_rate(diff.suite.base_rate)} -> {_rate(diff.suite.head_rate)}"
        lines.append(f"suite pass rate over {diff.suite.over}: {rates}, {diff.suite.evidence}")
    lines += _mean_score_lines(diff)
    lines += _usage_lines(diff)
    if diff.verdict_line:
        lines.append(f"verdict: {clean(diff.verdict_line, 600)}")
    if diff.reasons:
        lines.append(f"REGRESSED: {'; '.join(clean(r, 300) for r in diff.reasons)}")
    else:
        noise = sum(c.change == "noise" for c in diff.changed) + sum(m.change == "noise" for m in diff.mean_scores)
        lines.append(
            f"no regression beyond noise at alpha {diff.alpha:g}"
            + (f" ({noise} change{'s' * (noise != 1)} within noise)" if noise else "")
            + (f" or larger than --max-drop {diff.max_drop:g}" if diff.max_drop is not None else "")
            + _limits(diff)
        )
    return lines


def _usage_lines(diff: RunDiff) -> list[str]:
    """Cost per eval run and per passed run, p50 and p95 latency: each side, the change and its interval."""
    if not diff.usage:
        return [f"cost and latency: not compared ({'; '.join(diff.usage_notes)})"] if diff.usage_notes else []
    cases = diff.usage[0].cases
    over = f"{cases} shared case{'s' * (cases != 1)} ({diff.usage[0].method}, 95% CI)"
    lines = [f"cost and latency over {over}:"]
    for usage in diff.usage:
        over = f" over {usage.cases} cases" if usage.cases != cases else ""
        lines.append(
            f"  {usage.change:<10} {usage.measure}{over}: {usage.base_text} -> {usage.head_text}, {usage.evidence}"
        )
    lines += [f"  note: {note}" for note in diff.usage_notes]
    return lines


def _limits(diff: RunDiff) -> str:
    limits = [
        f"--{flag} {limit:.0%}"
        for flag, limit in (
            ("max-cost-increase", diff.max_cost_increase),
            ("max-latency-increase", diff.max_latency_increase),
        )
        if limit is not None
    ]
    return f" or past {' or '.join(limits)}" if limits else ""


def _mean_score_lines(diff: RunDiff) -> list[str]:
    """Each scored assertion's paired test over the shared cases, strongest evidence first."""
    lines = []
    for score in diff.mean_scores:
        mark = "REGRESSED" if score.regressed else _MARKS.get(score.change, "same")
        q = f" (q={score.q_value:.3g})" if score.q_value is not None else ""
        lines.append(
            f"  {mark:<10} mean score {clean(score.assertion, 120)} over {score.over}: "
            f"{score.base_mean:.2f} -> {score.head_mean:.2f}, {clean(score.evidence, 200)}{q}"
        )
    return lines


def _rate(value: float | None) -> str:
    return "n/a" if value is None else share(value)


def _print_record(result: RunResult, console: Console) -> None:
    """Every assertion and event of one run, plain text, untrusted strings cleaned."""
    out = console.file
    out.write(f"\nrun {result.run_index + 1} of {result.eval_id}: {result.outcome} in {result.duration_s:.2f}s\n")
    for a in result.assertions:
        score = "n/a" if a.score is None else f"{a.score:.2f}"
        where = f"  {a.location}" if a.location else ""
        out.write(f"  {a.state:<12} {clean(a.name, 120)} [{a.severity}] score {score} / {a.threshold:.2f}{where}\n")
        if a.reason:
            out.write(f"      {clean(a.reason, 600)}\n")
    for event in result.events:
        payload = event.model_dump(mode="json", exclude={"seq", "at", "type"}, exclude_none=True, fallback=repr)
        readable = {k: round(v, 3) if isinstance(v, float) else v for k, v in payload.items()}  # seconds, in ms
        out.write(f"  #{event.seq} {event.type}: {clean(str(readable), 300)}\n")
