"""The runs list (with the pass-rate trend) and one suite run's page (evals table, filters, judge summary)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from niceeval._core.assertion import AssertionResult
from niceeval._core.outcome import OUTCOMES, Outcome
from niceeval._core.results import RunResult, Spend
from niceeval._core.summary import EvalTally, PlannedEval
from niceeval._core.wording import miss_words
from niceeval.attacks import RESISTED, AttackRates, AttackTally
from niceeval.render import VariantTable, eval_points_text, interval_text, runs_rate, suite_rate, when
from niceeval.stats import Estimate
from niceeval.store import EvalRunInfo, Store, SuiteRunDetail, SuiteRunInfo
from niceeval.web import _queries
from niceeval.web._charts import Point, trend_line
from niceeval.web._pages import render
from niceeval.web._requests import page_number, store_of, suite_run

RUNS_PER_PAGE = 25
EVALS_PER_PAGE = 200
TREND_RUNS = 30
TREND_LOOKBACK = 200
"""Latest suite runs searched for the trend's complete ones."""
_VERDICT_ORDER: dict[str, int] = {"failed": 0, "scored": 1, "passed": 2, "skipped": 3}


@dataclass(frozen=True, slots=True)
class EvalLine:
    """One eval of a suite run, as its row in the run page."""

    eval_id: str
    location: str
    tags: list[str]
    verdict: Outcome
    counts: dict[Outcome, int]
    planned: int
    passing: int
    """Runs that count as passes (`scored` too, unless the suite ran `--strict`)."""
    counted: int
    """Runs that were not skipped."""
    pass_rate: float | None
    mean_duration_s: float
    cost: float | None
    error: str | None
    """The first miss, as the HTML report's index says it: the error that ended the lowest missing run, else
    that run's first failed assertion (`name: shortfall`)."""
    focus_run: int
    """The run index to open: the first failed run, else the first scored, else run 0."""
    points: str = ""
    """A score eval's points (`2/3 points`, or their mean over the runs with its interval); "" otherwise."""

    @property
    def done(self) -> int:
        return sum(self.counts.values())

    @property
    def interval(self) -> str:
        """`95% CI 49%-94%`: the Wilson interval of the pass rate over the runs (empty without runs)."""
        return interval_text(runs_rate(self.passing, self.counted))


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
    """`/runs/{run_id}`: the suite run's evals (failures first), filters, judge and spend summary."""
    store = store_of(request)
    detail = suite_run(store, request.path_params["run_id"])
    outcome = request.query_params.get("outcome", "")
    tag = request.query_params.get("tag", "")
    text = request.query_params.get("q", "").strip()
    lines = eval_lines(detail, _queries.first_misses(store, detail.run.id))
    tags = sorted({t for line in lines for t in line.tags})
    shown = [
        line
        for line in lines
        if (not outcome or line.verdict == outcome)
        and (not tag or tag in line.tags)
        and (not text or text.lower() in line.eval_id.lower())
    ]
    page = page_number(request)
    start = (page - 1) * EVALS_PER_PAGE
    filters = {k: v for k, v in (("outcome", outcome), ("tag", tag), ("q", text)) if v}
    return render(
        request,
        "run.html",
        run=detail.run,
        lines=shown[start : start + EVALS_PER_PAGE],
        matched=len(shown),
        total=len(lines),
        page=page,
        has_next=start + EVALS_PER_PAGE < len(shown),
        query=urlencode(filters),
        outcome=outcome,
        tag=tag,
        text=text,
        outcomes=OUTCOMES,
        tags=tags,
        judging=_queries.run_judging(store, detail.run.id),
        previous=_queries.previous_run(store, detail.run),
        missing_shards=detail.missing_shards,
        variants=variant_table(store, detail),
        attacks=attack_table(store, detail),
        pass_rate=runs_pass_rate(detail),
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
            tallies[info.eval_id].count_run(info.outcome, info.failure)
    return suite_rate(tallies.values(), strict=detail.run.strict)


def variant_table(store: Store, detail: SuiteRunDetail) -> dict[str, Any]:
    """The per-variant comparison of the HTML report, from the stored runs (empty without variants).

    Each eval run with a variant is folded as the report folds it, from its summary and its assertions' scores.
    """
    varied = [info for info in detail.eval_runs if info.variant]
    table = VariantTable()
    if not varied:
        return table.for_page(strict=detail.run.strict)
    scores = _queries.variant_scores(store, detail.run.id, sorted({info.eval_id for info in varied}))
    for info in varied:
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
    return table.for_page(strict=detail.run.strict)


def attack_table(store: Store, detail: SuiteRunDetail) -> AttackRates | None:
    """The attack success rates of the HTML report, from the stored `resisted attack` verdicts (None: no attacks)."""
    tally = AttackTally()
    for case_id, variant, state in _queries.attack_verdicts(store, detail.run.id):
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
            tally.count_run(info.outcome, info.failure)
            tally.total_duration_s += info.duration_s
            if info.outcome != "skipped":
                tally.add_points(info.points, info.points_possible)
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
                points=eval_points_text(tally),
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
