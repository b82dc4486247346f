"""One eval over time: its pass rate per suite run, each assertion's score, and a heat map of assertions x runs."""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from niceeval.render import when
from niceeval.store import EvalRunInfo
from niceeval.web import _queries
from niceeval.web._charts import Cell, Point, Series, heat_map, score_lines, trend_line
from niceeval.web._pages import render
from niceeval.web._requests import required, store_of

HISTORY_RUNS = 30
"""Suite runs shown in the charts."""
TABLE_RUNS = 100
"""Eval runs listed below the charts."""


def history_page(request: Request) -> Response:
    """`/evals/history?id=EVAL_ID`: the eval across the latest suite runs it ran in."""
    store = store_of(request)
    eval_id = required(request, "id")
    scores = _queries.score_history(store, eval_id, limit=HISTORY_RUNS)
    infos = store.history(eval_id, limit=TABLE_RUNS)
    by_suite: dict[str, list[EvalRunInfo]] = {}
    for info in infos:
        by_suite.setdefault(info.suite_run_id, []).append(info)
    labels = [f"{when(at)} ({run_id[:8]})" for run_id, at in scores.runs]
    links = [f"/runs/{run_id}" for run_id, _ in scores.runs]
    trend = trend_line(
        [Point(label, _pass_rate(by_suite.get(run_id, [])), href) for (run_id, _), label, href in
         zip(scores.runs, labels, links, strict=True)],
        title=f"Pass rate of {eval_id}",
    )  # fmt: skip
    lines = score_lines(
        [Series(name, [_score(scores, name, run_id) for run_id, _ in scores.runs]) for name in scores.names],
        labels,
        title="Assertion scores",
    )
    grid = [[_cell(scores, name, run_id, eval_id) for run_id, _ in scores.runs] for name in scores.names]
    return render(
        request,
        "history.html",
        eval_id=eval_id,
        trend=trend,
        lines=lines,
        heat=heat_map(scores.names, labels, grid),
        infos=infos,
        suite_runs=len(scores.runs),
    )


def _pass_rate(runs: list[EvalRunInfo]) -> float | None:
    counted = [r for r in runs if r.outcome != "skipped"]
    if not counted:
        return None
    return sum(1 for r in counted if r.outcome in ("passed", "scored")) / len(counted)


def _score(scores: _queries.ScoreHistory, name: str, run_id: str) -> float | None:
    cell = scores.cells.get((name, run_id))
    return None if cell is None else cell.score


def _cell(scores: _queries.ScoreHistory, name: str, run_id: str, eval_id: str) -> Cell | None:
    found = scores.cells.get((name, run_id))
    if found is None:
        return None
    return Cell(found.score, found.state, href=f"/runs/{run_id}/eval?id={quote(eval_id, safe='')}")
