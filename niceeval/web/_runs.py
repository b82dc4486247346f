"""The runs list (with the pass-rate trend) and one suite run's page (evals table, filters, judge summary)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from niceeval._core.assertion import AssertionResult
from niceeval._core.outcome import OUTCOMES
from niceeval._core.results import RunResult, Spend
from niceeval._core.summary import EvalTally, PlannedEval
from niceeval._core.wording import miss_words
from niceeval.render import VariantTable, suite_rate, when
from niceeval.stats import Estimate
from niceeval.store import EvalRunInfo, Store, SuiteRunDetail, SuiteRunInfo
from niceeval.web import _queries
from niceeval.web._charts import Point, trend_line
from niceeval.web._lines import SORTS, EvalLine, line_page, line_query
from niceeval.web._pages import render
from niceeval.web._requests import page_number, store_of

RUNS_PER_PAGE = 25
EVALS_PER_PAGE = 200
TREND_RUNS = 30
TREND_LOOKBACK = 200
"""Latest suite runs searched for the trend's complete ones."""
_VERDICT_ORDER: dict[str, int] = {"failed": 0, "scored": 1, "passed": 2, "skipped": 3}


def runs_page(request: Request) -> Response:
    """`/`: suite runs, latest first, paginated; a pass-rate trend over the latest complete runs."""
    store = store_of(request)
    page = page_number(request)
    found = store.runs(limit=RUNS_PER_PAGE + 1, offset=(page - 1) * RUNS_PER_PAGE)
    recent = store.runs(limit=TREND_LOOKBACK)
    charted = [r for r in recent if charted_in_trend(r)][:TREND_RUNS]
    oldest = recent.index(charted[-1]) + 1 if charted else len(recent)
    rates = _queries.runs_pass_rates(store, [*found, *charted])
    trend = trend_line(
        [Point(f"{when(r.started_at)} ({r.id[:8]})", rates[r.id], href=f"/runs/{r.id}") for r in reversed(charted)],
        width=1200,
        height=170,
        title="Pass rate over the latest complete runs",
    )
    return render(
        request,
        "runs.html",
        runs=found[:RUNS_PER_PAGE],
        page=page,
        has_next=len(found) > RUNS_PER_PAGE,
        trend=trend,
        rates=rates,
        trend_runs=len(charted),
        left_out=oldest - len(charted),
        store_url=store.url,
    )


def charted_in_trend(run: SuiteRunInfo) -> bool:
    """Whether the runs page's trend draws `run`: a whole `niceeval run` (or `--rerun-failed`) that finished.

    A pytest session, a rescore or a calibration measures something else, and an interrupted run or one with
    shards missing holds part of the suite: on one line with full runs, each would look like a jump.
    """
    return run.kind in ("run", "rerun") and run.status == "finished" and not run.shards_pending


def run_page(request: Request) -> Response:
    """`/runs/{run_id}`: the suite run's evals (failures first, or as sorted), filters, judge and spend summary.

    The evals are filtered, sorted and paginated in the store (`_lines`): a page past the last shows the last.
    """
    store = store_of(request)
    run = _queries.run_info(store, request.path_params["run_id"])
    query = line_query(request)
    found = line_page(store, run, query, page_number(request), EVALS_PER_PAGE)
    shards = store.shards(run.id) if run.shard_count is not None else []
    missing = SuiteRunDetail(run=run, evals=[], eval_runs=[], shards=shards).missing_shards
    return render(
        request,
        "run.html",
        run=run,
        lines=found.lines,
        matched=found.matched,
        total=found.total,
        page=found.page,
        pages=found.pages,
        has_next=found.has_next,
        query=urlencode(query.params),
        outcome=query.outcome,
        tag=query.tag,
        text=query.text,
        sort=query.sort,
        order=query.order,
        sorts=SORTS,
        outcomes=OUTCOMES,
        tags=found.tags,
        judging=_queries.run_judging(store, run.id),
        previous=_queries.previous_run(store, run),
        missing_shards=missing,
        variants=variant_table(store, run, found.varied),
        pass_rate=found.pass_rate,
    )


def runs_pass_rate(detail: SuiteRunDetail) -> Estimate:
    """The suite's pass rate over its cases with its interval, as the console and the JSON report give it
    (`suite_rate`), not the share of evals (the runs list's column, one verdict per eval)."""
    tallies = {
        p.eval_id: EvalTally(eval=PlannedEval(id=p.eval_id, file=p.file, line=p.line, cluster=p.cluster))
        for p in detail.evals
    }
    for info in detail.eval_runs:
        if info.eval_id in tallies:
            tallies[info.eval_id].counts[info.outcome] += 1
    return suite_rate(tallies.values(), strict=detail.run.strict)


def variant_table(store: Store, run: SuiteRunInfo, varied: list[str]) -> dict[str, Any]:
    """The per-variant comparison of the HTML report, from the runs of the evals that ran with variants (empty
    without variants).

    Each eval run with a variant is folded as the report folds it, from its summary and its assertions' scores.
    """
    table = VariantTable()
    if not varied:
        return table.for_page(strict=run.strict)
    scores = _queries.variant_scores(store, run.id, varied)
    for info in _queries.varied_runs(store, run.id, varied):
        checks = [
            AssertionResult(name=name, severity="soft", score=score, threshold=0.0, state="passed")
            for name, score in scores.get((info.eval_id, info.run_index), [])
        ]
        table.add(
            RunResult(
                eval_id=info.eval_id, file="", line=0, run_index=info.run_index, outcome=info.outcome,
                duration_s=info.duration_s, assertions=checks, agent_spend=Spend(cost=info.agent_cost),
                judge_spend=Spend(cost=info.judge_cost), case_id=info.case_id, variant=info.variant,
            )
        )  # fmt: skip
    return table.for_page(strict=run.strict)


def eval_lines(detail: SuiteRunDetail, misses: dict[tuple[str, int], AssertionResult] | None = None) -> list[EvalLine]:
    """One line per planned eval (with its runs folded into a verdict), failures first, then plan order.

    `misses`: the first failed assertion of each eval run that missed (`_queries.first_misses`).
    """
    misses = misses or {}
    runs: dict[str, list[EvalRunInfo]] = {}
    for info in detail.eval_runs:
        runs.setdefault(info.eval_id, []).append(info)
    strict, min_rate = detail.run.strict, detail.run.min_pass_rate
    lines = []
    for planned in detail.evals:
        done = runs.get(planned.eval_id, [])
        if not done:
            continue
        tally = EvalTally(eval=PlannedEval(id=planned.eval_id, file=planned.file, line=planned.line, runs=planned.runs))
        for info in done:
            tally.counts[info.outcome] += 1
            tally.total_duration_s += info.duration_s
        lines.append(
            EvalLine(
                eval_id=planned.eval_id,
                location=f"{planned.file}:{planned.line}",
                tags=planned.tags,
                verdict=tally.status(strict=strict, min_pass_rate=min_rate),
                counts=tally.counts,
                planned=planned.runs,
                passing=tally.passing(strict=strict),
                counted=tally.counted,
                pass_rate=tally.pass_rate(strict=strict),
                mean_duration_s=tally.mean_duration_s,
                cost=_cost(done),
                error=_first_miss(done, misses),
                focus_run=_focus(done),
            )
        )
    return sorted(lines, key=lambda line: _VERDICT_ORDER[line.verdict])


def _cost(runs: list[EvalRunInfo]) -> float | None:
    total = 0.0
    for info in runs:
        if info.agent_cost is None or info.judge_cost is None:
            return None
        total += info.agent_cost + info.judge_cost
    return total


def _first_miss(runs: list[EvalRunInfo], misses: dict[tuple[str, int], AssertionResult]) -> str | None:
    missed = [info for info in runs if info.outcome in ("failed", "scored")]
    if not missed:
        return None
    first = min(missed, key=lambda info: info.run_index)
    return miss_words(first.error, misses.get((first.eval_id, first.run_index)))


def _focus(runs: list[EvalRunInfo]) -> int:
    for wanted in ("failed", "scored"):
        for info in runs:
            if info.outcome == wanted:
                return info.run_index
    return runs[0].run_index


def recent_runs(store: Store, limit: int = 50) -> list[SuiteRunInfo]:
    """The latest suite runs, for pickers."""
    return store.runs(limit=limit)
