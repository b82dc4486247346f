"""The store as DataFrames: one row per suite run, per eval run, per assertion (`Store.runs_df`, `evals_df`,
`assertions_df`), in pandas or polars, each imported only when asked for (the `analysis` extra).

Each frame is read by one or two queries over the columns it shows: no `RunResult` is loaded, so an eval run's
events, turns and spans are never read. The columns are documented in docs/store.md; a test pins them.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from typing import Any, Literal

from sqlalchemy import Connection, case, func, select

from niceeval.store import _read
from niceeval.store._schema import assertions, eval_runs, suite_evals, suite_runs

FrameKind = Literal["pandas", "polars"]
Row = tuple[Any, ...]

RUN_COLUMNS = (
    "run_id", "started_at", "finished_at", "status", "kind", "parent_id", "git_commit", "git_branch", "git_dirty",
    "niceeval_version", "strict", "min_pass_rate", "evals", "runs_planned", "runs_done", "passed", "scored",
    "failed", "skipped", "pass_rate", "exit_code", "duration_s", "agent_cost", "judge_cost", "agent_tokens",
    "judge_tokens",
)  # fmt: skip
EVAL_COLUMNS = (
    "run_id", "eval_id", "run_index", "case_id", "variant", "tags", "file", "line", "outcome", "mean_score",
    "assertions", "failed_assertions", "error", "skip_reason", "finished_at", "duration_s", "agent_calls",
    "agent_tokens", "input_tokens", "output_tokens", "cache_read_tokens", "agent_cost", "judge_calls",
    "judge_tokens", "judge_cost", "judge_cached",
)  # fmt: skip
ASSERTION_COLUMNS = (
    "run_id", "eval_id", "run_index", "case_id", "position", "name", "key", "severity", "state", "score",
    "threshold", "optional", "unstable", "cause", "reason", "expected", "actual", "location",
)  # fmt: skip


def frame(columns: Sequence[str], rows: Sequence[Row], as_: str, method: str) -> Any:
    """`rows` under `columns` as a pandas or polars DataFrame."""
    library = _library(as_, method)
    if as_ == "pandas":
        return library.DataFrame.from_records(list(rows), columns=list(columns))
    return library.DataFrame(list(rows), schema=list(columns), orient="row", infer_schema_length=None)


def _library(as_: str, method: str) -> Any:
    if as_ not in ("pandas", "polars"):
        raise ValueError(f"Store.{method}(as_=...) takes 'pandas' or 'polars', got {as_!r}")
    try:
        return importlib.import_module(as_)
    except ImportError as exc:
        raise ImportError(
            f"Store.{method}(as_={as_!r}) needs {as_}, which is not installed: run pip install 'niceeval[analysis]'"
        ) from exc


def run_rows(conn: Connection, limit: int | None) -> list[Row]:
    """One row per suite run, latest first (the latest `limit`, or all)."""
    count = limit if limit is not None else conn.execute(select(func.count()).select_from(suite_runs)).scalar_one()
    runs = _read.list_runs(conn, limit=count)
    rates = _read.pass_rates(conn, runs) if runs else {}
    return [
        (run.id, run.started_at, run.finished_at, run.status, run.kind, run.parent_id, run.git_commit,
         run.git_branch, run.git_dirty, run.niceeval_version, run.strict, run.min_pass_rate, run.evals,
         run.runs_planned, run.runs_done, run.passed, run.scored, run.failed, run.skipped, rates.get(run.id),
         run.exit_code, run.duration_s, run.agent_cost, run.judge_cost, run.agent_tokens, run.judge_tokens)
        for run in runs
    ]  # fmt: skip


def eval_rows(conn: Connection, suite_run_id: str) -> list[Row]:
    """One row per eval run of a suite run, in plan order, then by run index."""
    plan = {
        row.eval_id: (row.position, list(row.tags))
        for row in conn.execute(
            select(suite_evals.c.eval_id, suite_evals.c.position, suite_evals.c.tags).where(
                suite_evals.c.suite_run_id == suite_run_id
            )
        )
    }
    scored = (
        select(
            assertions.c.eval_run_id,
            func.avg(assertions.c.score).label("mean_score"),
            func.count().label("assertions"),
            func.sum(case((assertions.c.state == "failed", 1), else_=0)).label("failed_assertions"),
        )
        .group_by(assertions.c.eval_run_id)
        .subquery()
    )
    query = (
        select(eval_runs, scored.c.mean_score, scored.c.assertions, scored.c.failed_assertions)
        .outerjoin(scored, scored.c.eval_run_id == eval_runs.c.id)
        .where(eval_runs.c.suite_run_id == suite_run_id)
    )
    rows = sorted(
        conn.execute(query).mappings(),
        key=lambda r: (plan.get(r["eval_id"], (len(plan), []))[0], r["eval_id"], r["run_index"]),
    )
    return [_eval_row(row, plan.get(row["eval_id"], (0, []))[1]) for row in rows]


def _eval_row(row: Any, tags: list[str]) -> Row:
    error = row["error"]
    return (
        row["suite_run_id"], row["eval_id"], row["run_index"], row["case_id"],
        None if row["variant"] is None else json.dumps(row["variant"], sort_keys=True), tags, row["file"],
        row["line"], row["outcome"], row["mean_score"], row["assertions"] or 0, int(row["failed_assertions"] or 0),
        f"{error['type']}: {error['message']}" if error else None, row["skip_reason"], row["finished_at"],
        row["duration_s"], row["agent_calls"], row["agent_tokens"], row["input_tokens"], row["output_tokens"],
        row["cache_read_tokens"], row["agent_cost"], row["judge_calls"], row["judge_tokens"], row["judge_cost"],
        row["judge_cached"],
    )  # fmt: skip


def assertion_rows(conn: Connection, suite_run_id: str) -> list[Row]:
    """One row per assertion of a suite run's eval runs, in the order of `eval_rows`, then by position."""
    planned = select(suite_evals.c.eval_id, suite_evals.c.position).where(suite_evals.c.suite_run_id == suite_run_id)
    plan = {row.eval_id: row.position for row in conn.execute(planned)}
    query = (
        select(eval_runs.c.eval_id, eval_runs.c.run_index, eval_runs.c.case_id, assertions)
        .join(eval_runs, eval_runs.c.id == assertions.c.eval_run_id)
        .where(eval_runs.c.suite_run_id == suite_run_id)
    )
    rows = sorted(
        conn.execute(query).mappings(),
        key=lambda r: (plan.get(r["eval_id"], len(plan)), r["eval_id"], r["run_index"], r["position"]),
    )
    return [
        (suite_run_id, r["eval_id"], r["run_index"], r["case_id"], r["position"], r["name"], r["key"],
         r["severity"], r["state"], r["score"], r["threshold"], r["optional"], r["unstable"], r["cause"],
         r["reason"], r["expected"], r["actual"], r["location"])
        for r in rows
    ]  # fmt: skip
