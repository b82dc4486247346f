"""What `niceeval runs` and `niceeval show` print, rebuilt from the results store."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console

from niceeval._core.results import RunResult
from niceeval._core.summary import EvalTally, Problem, SuiteSummary
from niceeval.report import ConsoleReporter
from niceeval.report.console import clean
from niceeval.store import Store, SuiteRunInfo


def _when(info: SuiteRunInfo) -> str:
    return info.started_at.astimezone().strftime("%Y-%m-%d %H:%M")


def _commit(info: SuiteRunInfo) -> str:
    if not info.git_commit:
        return "-"
    return info.git_commit[:8] + ("*" if info.git_dirty else "")


def _cost(info: SuiteRunInfo) -> str:
    return "?" if info.cost is None else f"${info.cost:.4f}"


def runs_table(runs: Iterable[SuiteRunInfo]) -> list[str]:
    """One line per suite run: id, when, commit, passed/scored/failed/skipped, pass rate, cost, duration."""
    lines = [
        f"{'RUN':<12}  {'STARTED':<16}  {'COMMIT':<9}  {'PASS/SCORED/FAIL/SKIP':<22}  {'RATE':>5}  "
        f"{'COST':>9}  {'TIME':>8}  STATUS"
    ]
    for info in runs:
        counts = f"{info.passed}/{info.scored}/{info.failed}/{info.skipped}"
        rate = "-" if info.pass_rate is None else f"{info.pass_rate:.0%}"
        took = "-" if info.duration_s is None else f"{info.duration_s:.1f}s"
        status = info.status + (f" ({info.runs_done}/{info.runs_planned} runs)" if info.status != "finished" else "")
        lines.append(
            f"{info.id:<12}  {_when(info):<16}  {_commit(info):<9}  {counts:<22}  {rate:>5}  {_cost(info):>9}  "
            f"{took:>8}  {status}"
        )
    if len(lines) == 1:
        lines.append("(no suite runs yet: `niceeval run` records one)")
    return lines


def show_run(store: Store, ref: str, eval_id: str | None, console: Console) -> None:
    """The console report of a stored suite run, as `niceeval run` printed it; with `eval_id`, that eval in full."""
    detail = store.run(ref)
    info = detail.run
    plan = store.planned(info.id)
    if eval_id is not None:
        plan = [p for p in plan if p.id == eval_id]
        if not plan:
            from niceeval.store import RunNotFound

            raise RunNotFound(f"suite run {info.id} has no eval {eval_id!r}; `niceeval show {info.id}` lists them.")
    branch = f" ({info.git_branch})" if info.git_branch else ""
    console.file.write(f"run {info.id} · {_when(info)} · commit {_commit(info)}{branch} · {info.status}\n")
    reporter = ConsoleReporter(console, strict=info.strict, min_pass_rate=info.min_pass_rate)
    reporter.start(plan, [])
    tallies = {p.id: EvalTally(eval=p) for p in plan}
    kept: list[RunResult] = []
    for result in store.results(info.id, eval_ids=[eval_id] if eval_id else None):
        tallies[result.eval_id].add(result)
        reporter.run_finished(result)
        if eval_id is not None:
            kept.append(result)
    summary = SuiteSummary(
        tallies=list(tallies.values()),
        problems=[Problem(location=e["location"], message=e["message"]) for e in info.errors] if not eval_id else [],
        duration_s=info.duration_s or 0.0,
        strict=info.strict,
        min_pass_rate=info.min_pass_rate,
        interrupted=info.status == "interrupted",
    )
    reporter.finish(summary)
    for result in sorted(kept, key=lambda r: r.run_index):
        _print_record(result, console)


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
        out.write(f"  #{event.seq} {event.type}: {clean(str(payload), 300)}\n")
