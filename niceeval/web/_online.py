"""`/online`: what `niceeval watch` found in production: each online assertion's pass rate per day with its
interval, the alarms that fired, and the latest failing traces."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from urllib.parse import quote

from sqlalchemy import Text, cast, func, select
from starlette.requests import Request
from starlette.responses import Response

from niceeval.render import when
from niceeval.stats import wilson
from niceeval.store import Store
from niceeval.store.tables import assertions, eval_runs, suite_runs
from niceeval.web._charts import Point, trend_line
from niceeval.web._pages import render
from niceeval.web._requests import store_of

DAYS = 30
"""Online suite runs (one per watch session and day) shown."""
FAILING = 50
"""Failing traces listed."""
ALARMS = 50
"""Alarms listed."""
_COUNTED = ("passed", "failed", "scored")


@dataclass(frozen=True, slots=True)
class TraceLink:
    """One stored online result: its eval, trace, when, and where the viewer shows it."""

    eval_id: str
    trace_id: str
    finished_at: datetime
    href: str
    text: str = ""
    run_id: str = ""
    """The online suite run holding the result (the button that writes the trace's regression names it)."""


@dataclass(frozen=True, slots=True)
class AssertionRow:
    """One online assertion: its latest day's rate with the interval, and its trend over the days."""

    eval_id: str
    name: str
    passed: int
    counted: int
    low: float | None
    high: float | None
    trend: object


def online_page(request: Request) -> Response:
    """`/online`: the online evals' rolling pass rates, alarms and failing traces."""
    store = store_of(request)
    runs = _online_runs(store)
    ids = [run_id for run_id, _ in runs]
    tallies = _tallies(store, ids)
    labels = [f"{when(at)} ({run_id[:8]})" for run_id, at in runs]
    rows = []
    for (eval_id, name), by_run in sorted(tallies.items()):
        latest = by_run.get(ids[-1], (0, 0)) if ids else (0, 0)
        estimate = wilson(*latest)
        points = [
            Point(label, (k / n) if n else None, f"/runs/{run_id}")
            for (run_id, _), label in zip(runs, labels, strict=True)
            for k, n in [by_run.get(run_id, (0, 0))]
        ]
        rows.append(
            AssertionRow(
                eval_id, name, latest[0], latest[1], estimate.low, estimate.high, trend_line(points, title=name)
            )
        )
    return render(
        request,
        "online.html",
        runs=runs,
        rows=rows,
        alarms=_alarms(store, ids),
        failing=_failing(store, ids),
    )


def _online_runs(store: Store) -> list[tuple[str, datetime]]:
    """The latest online suite runs, oldest first."""
    with store.engine.connect() as conn:
        found = conn.execute(
            select(suite_runs.c.id, suite_runs.c.started_at)
            .where(suite_runs.c.kind == "online")
            .order_by(suite_runs.c.started_at.desc(), suite_runs.c.id)
            .limit(DAYS)
        ).all()
    return [(str(run_id), at) for run_id, at in found][::-1]


def _tallies(store: Store, ids: list[str]) -> dict[tuple[str, str], dict[str, tuple[int, int]]]:
    """(eval, assertion) -> suite run -> (passed, counted): inconclusive and skipped assertions are not counted."""
    if not ids:
        return {}
    with store.engine.connect() as conn:
        found = conn.execute(
            select(eval_runs.c.suite_run_id, eval_runs.c.eval_id, assertions.c.name, assertions.c.state, func.count())
            .join(assertions, assertions.c.eval_run_id == eval_runs.c.id)
            .where(eval_runs.c.suite_run_id.in_(ids))
            .group_by(eval_runs.c.suite_run_id, eval_runs.c.eval_id, assertions.c.name, assertions.c.state)
        ).all()
    tallies: dict[tuple[str, str], dict[str, tuple[int, int]]] = {}
    for run_id, eval_id, name, state, count in found:
        if state not in _COUNTED:
            continue
        passed, counted = tallies.setdefault((eval_id, name), {}).get(run_id, (0, 0))
        tallies[eval_id, name][run_id] = (passed + (count if state == "passed" else 0), counted + count)
    return tallies


def _failing(store: Store, ids: list[str]) -> list[TraceLink]:
    if not ids:
        return []
    with store.engine.connect() as conn:
        found = conn.execute(
            select(eval_runs.c.suite_run_id, eval_runs.c.eval_id, eval_runs.c.run_index, eval_runs.c.case_id,
                   eval_runs.c.finished_at)
            .where(eval_runs.c.suite_run_id.in_(ids), eval_runs.c.outcome == "failed")
            .order_by(eval_runs.c.id.desc())
            .limit(FAILING)
        ).all()  # fmt: skip
    return [_link(*row) for row in found]


def _alarms(store: Store, ids: list[str]) -> list[TraceLink]:
    if not ids:
        return []
    with store.engine.connect() as conn:
        found = conn.execute(
            select(eval_runs.c.suite_run_id, eval_runs.c.eval_id, eval_runs.c.run_index, eval_runs.c.case_id,
                   eval_runs.c.finished_at, eval_runs.c.warnings)
            .where(eval_runs.c.suite_run_id.in_(ids), cast(eval_runs.c.warnings, Text).like("%ALARM %"))
            .order_by(eval_runs.c.id.desc())
            .limit(ALARMS)
        ).all()  # fmt: skip
    return [
        _link(run_id, eval_id, run_index, case_id, at, text)
        for run_id, eval_id, run_index, case_id, at, warnings in found
        for text in warnings or []
        if str(text).startswith("ALARM ")
    ]


def _link(run_id: str, eval_id: str, run_index: int, case_id: str | None, at: datetime, text: str = "") -> TraceLink:
    href = f"/runs/{quote(run_id, safe='')}/eval?id={quote(eval_id, safe='')}&run={run_index}"
    return TraceLink(eval_id=eval_id, trace_id=case_id or "", finished_at=at, href=href, text=text, run_id=run_id)
