"""The runs list (with the pass-rate trend) and one suite run's page (evals table, filters, judge summary)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from niceeval._core.assertion import AssertionResult
from niceeval._core.outcome import OUTCOMES
from niceeval._core.results import RunResult, Spend
from niceeval.attacks import RESISTED, AttackRates, AttackTally
from niceeval.render import VariantTable, when
from niceeval.store import Store, SuiteRunDetail, SuiteRunInfo
from niceeval.web import _queries
from niceeval.web._charts import Point, trend_line
from niceeval.web._lines import SORTS, line_page, line_query
from niceeval.web._pages import render
from niceeval.web._requests import page_number, store_of

RUNS_PER_PAGE = 25
EVALS_PER_PAGE = 200
TREND_RUNS = 30
TREND_LOOKBACK = 200
"""Latest suite runs searched for the trend's complete ones."""


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
        judging=_queries.run_judging(store, run),
        previous=_queries.previous_run(store, run),
        missing_shards=missing,
        variants=variant_table(store, run, found.varied),
        attacks=attack_table(store, run),
        pass_rate=found.pass_rate,
    )


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


def attack_table(store: Store, run: SuiteRunInfo) -> AttackRates | None:
    """The attack success rates of the HTML report, from the stored `resisted attack` verdicts (None: no attacks)."""
    tally = AttackTally()
    for case_id, variant, state in _queries.attack_verdicts(store, run.id):
        verdict = AssertionResult(
            name=RESISTED, severity="gate", score=None, threshold=1.0, state="failed" if state == "failed" else "passed"
        )
        tally.add(
            RunResult(
                eval_id="", file="", line=0, outcome="passed", duration_s=0.0, assertions=[verdict], case_id=case_id,
                variant=variant or None,
            )
        )  # fmt: skip
    return tally.rates()


def recent_runs(store: Store, limit: int = 50) -> list[SuiteRunInfo]:
    """The latest suite runs, for pickers."""
    return store.runs(limit=limit)
