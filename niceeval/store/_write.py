"""Writing suite runs: the header and plan at start, eval runs in batches, totals at the end."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, update

from niceeval._core.results import RunResult
from niceeval._core.summary import PlannedEval
from niceeval.store._compare import verdicts
from niceeval.store._meta import niceeval_version
from niceeval.store._models import SuiteRunStart, SuiteStatus
from niceeval.store._rows import RunRows, to_rows
from niceeval.store._schema import (
    assertions,
    eval_runs,
    events,
    judge_calls,
    spans,
    suite_evals,
    suite_runs,
    turns,
)


def insert_suite(
    conn: Connection,
    start: SuiteRunStart,
    plan: Sequence[PlannedEval],
    *,
    shard_count: int | None = None,
    plan_digest: str | None = None,
) -> None:
    """Record a new suite run (status `running`) and the evals it plans (`shard_count`: written by shards)."""
    conn.execute(
        insert(suite_runs).values(
            **start.model_dump(),
            shard_count=shard_count,
            plan_digest=plan_digest,
            started_at=datetime.now(UTC),
            status="running",
            niceeval_version=niceeval_version(),
            evals=len(plan),
            runs_planned=sum(p.runs for p in plan),
        )
    )
    add_plan(conn, start.id, plan, first_position=0)


def add_plan(conn: Connection, suite_run_id: str, plan: Sequence[PlannedEval], *, first_position: int) -> None:
    """Plan more evals in a suite run (a resume that raised `--runs` updates theirs)."""
    if not plan:
        return
    known = {
        row.eval_id: row.runs
        for row in conn.execute(
            select(suite_evals.c.eval_id, suite_evals.c.runs).where(suite_evals.c.suite_run_id == suite_run_id)
        )
    }
    fresh = [p for p in plan if p.id not in known]
    if fresh:
        conn.execute(
            insert(suite_evals),
            [
                {"suite_run_id": suite_run_id, "eval_id": p.id, "position": first_position + i, "file": p.file,
                 "line": p.line, "tags": list(p.tags), "runs": p.runs, "cluster": p.cluster}
                for i, p in enumerate(fresh)
            ],
        )  # fmt: skip
    for p in plan:
        if p.id in known and p.runs > known[p.id]:
            conn.execute(
                update(suite_evals)
                .where(suite_evals.c.suite_run_id == suite_run_id, suite_evals.c.eval_id == p.id)
                .values(runs=p.runs)
            )


def insert_runs(conn: Connection, suite_run_id: str, results: Sequence[RunResult]) -> None:
    """Record finished eval runs (one statement per table for the whole batch)."""
    batch = [to_rows(suite_run_id, r) for r in results]
    run_ids = (
        conn.execute(
            insert(eval_runs).returning(eval_runs.c.id, sort_by_parameter_order=True), [b.eval_run for b in batch]
        )
        .scalars()
        .all()
    )
    _insert_children(conn, batch, list(run_ids))


def _insert_children(conn: Connection, batch: Sequence[RunRows], run_ids: list[int]) -> None:
    assertion_rows: list[dict[str, Any]] = []
    calls: list[list[dict[str, Any]]] = []
    event_rows: list[dict[str, Any]] = []
    turn_rows: list[dict[str, Any]] = []
    span_rows: list[dict[str, Any]] = []
    for rows, run_id in zip(batch, run_ids, strict=True):
        assertion_rows += [{**a, "eval_run_id": run_id} for a in rows.assertions]
        calls += rows.judge_calls
        event_rows += [{**e, "eval_run_id": run_id} for e in rows.events]
        turn_rows += [{**t, "eval_run_id": run_id} for t in rows.turns]
        span_rows += [{**t, "eval_run_id": run_id} for t in rows.spans]
    if any(calls):
        ids = conn.execute(
            insert(assertions).returning(assertions.c.id, sort_by_parameter_order=True), assertion_rows
        ).scalars()
        call_rows = [{**c, "assertion_id": a_id} for a_id, group in zip(ids, calls, strict=True) for c in group]
        conn.execute(insert(judge_calls), call_rows)
    elif assertion_rows:
        conn.execute(insert(assertions), assertion_rows)
    if event_rows:
        conn.execute(insert(events), event_rows)
    if turn_rows:
        conn.execute(insert(turns), turn_rows)
    if span_rows:
        conn.execute(insert(spans), span_rows)


def finish_suite(
    conn: Connection,
    suite_run_id: str,
    *,
    status: SuiteStatus,
    exit_code: int | None,
    duration_s: float,
    errors: list[dict[str, str]],
) -> None:
    """Close a suite run: its status, exit code and totals counted from the eval runs stored in it."""
    conn.execute(
        update(suite_runs)
        .where(suite_runs.c.id == suite_run_id)
        .values(
            status=status,
            finished_at=datetime.now(UTC),
            exit_code=exit_code,
            duration_s=func.coalesce(suite_runs.c.duration_s, 0.0) + duration_s,  # a resume adds its own time
            errors=errors,
            **totals(conn, suite_run_id),
        )
    )


def reopen(conn: Connection, suite_run_id: str) -> None:
    """Mark a suite run `running` again (a resume is about to complete it)."""
    conn.execute(update(suite_runs).where(suite_runs.c.id == suite_run_id).values(status="running", finished_at=None))


def totals(conn: Connection, suite_run_id: str) -> dict[str, Any]:
    """Eval verdicts, runs, tokens and spend of a suite run, counted from its stored eval runs."""
    counts = dict.fromkeys(("passed", "scored", "failed", "skipped"), 0)
    for verdict in verdicts(conn, suite_run_id).values():
        counts[verdict] += 1
    plan = conn.execute(
        select(func.count(), func.coalesce(func.sum(suite_evals.c.runs), 0)).where(
            suite_evals.c.suite_run_id == suite_run_id
        )
    ).one()
    spend = conn.execute(
        select(
            func.count(),
            func.coalesce(func.sum(eval_runs.c.agent_tokens), 0),
            func.coalesce(func.sum(eval_runs.c.judge_tokens), 0),
            func.sum(eval_runs.c.agent_cost),
            func.sum(eval_runs.c.judge_cost),
            func.count(eval_runs.c.agent_cost),
            func.count(eval_runs.c.judge_cost),
        ).where(eval_runs.c.suite_run_id == suite_run_id)
    ).one()
    runs, agent_tokens, judge_tokens, agent_cost, judge_cost, agent_priced, judge_priced = spend
    return {
        **counts,
        "runs_done": runs,
        "agent_tokens": agent_tokens,
        "judge_tokens": judge_tokens,
        # a run whose model has no price has a NULL cost: the sum is then unknown, never a silent undercount
        "agent_cost": (agent_cost or 0.0) if agent_priced == runs else None,
        "judge_cost": (judge_cost or 0.0) if judge_priced == runs else None,
        "evals": plan[0],
        "runs_planned": plan[1],
    }


def delete_old(conn: Connection, keep: int) -> tuple[int, int]:
    """Delete every suite run but the `keep` latest (and any still `running`); (suite runs, eval runs) deleted."""
    kept = select(suite_runs.c.id).order_by(suite_runs.c.started_at.desc(), suite_runs.c.id).limit(keep)
    doomed = [
        row.id
        for row in conn.execute(
            select(suite_runs.c.id).where(suite_runs.c.id.not_in(kept), suite_runs.c.status != "running")
        )
    ]
    if not doomed:
        return 0, 0
    runs = conn.execute(
        select(func.count()).select_from(eval_runs).where(eval_runs.c.suite_run_id.in_(doomed))
    ).scalar_one()
    conn.execute(delete(suite_runs).where(suite_runs.c.id.in_(doomed)))
    return len(doomed), int(runs)
