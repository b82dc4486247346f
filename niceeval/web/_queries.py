"""Aggregates the viewer shows that the store's record API would have to load whole runs for.

The store's read API returns records (a suite run's header and eval run summaries, one eval run in full); these
read-only queries sum over its tables instead (judge calls per model, inconclusive causes, assertion scores
across suite runs), so a page over a 1,000-eval suite run stays one or two round trips.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Select, func, literal, select
from starlette.exceptions import HTTPException

from niceeval._core.assertion import AssertionResult, JudgeCall
from niceeval.attacks import RESISTED
from niceeval.render import JudgeModelUse
from niceeval.store import EvalRunInfo, RunNotFound, Store, SuiteRunInfo
from niceeval.store.tables import (
    assertions,
    eval_runs,
    header,
    judge_calls,
    resolve,
    run_summary,
    suite_runs,
    suite_runs_with,
)
from niceeval.store.tables import run_judging as kept_or_folded_judging


@dataclass(frozen=True, slots=True)
class RunJudging:
    """Judge calls, inconclusive causes and the most missed assertions of one suite run."""

    models: list[JudgeModelUse]
    """Counted as `_judging.JudgeModelUse.add` counts them (a cached verdict is not a call)."""
    inconclusive: dict[str, int]
    """Inconclusive assertions by cause (`no_api_key`, `timeout`, ...)."""
    missed: list[tuple[str, int]]
    """Assertion names that failed most often, with how often (top ten)."""

    @property
    def calls(self) -> int:
        """Judge requests that reached a provider, over every model."""
        return sum(m.calls for m in self.models)

    @property
    def cached(self) -> int:
        """Judge verdicts read from the judge cache, over every model."""
        return sum(m.cached for m in self.models)


@dataclass(frozen=True, slots=True)
class ScoreCell:
    """One assertion of one eval in one suite run: mean score over its runs and the worst state."""

    score: float | None
    state: str


@dataclass(slots=True)
class ScoreHistory:
    """An eval's assertions across suite runs, oldest suite run first."""

    runs: list[tuple[str, datetime]] = field(default_factory=list)
    """`(suite_run_id, started_at)` of each suite run the eval ran in."""
    names: list[str] = field(default_factory=list)
    """Assertion names, in the order they first appeared."""
    cells: dict[tuple[str, str], ScoreCell] = field(default_factory=dict)
    """`(assertion name, suite_run_id)` -> its cell."""


_STATE_RANK = {"failed": 2, "inconclusive": 1, "passed": 0}


def run_judging(store: Store, run: SuiteRunInfo) -> RunJudging:
    """Judge use, inconclusive causes and most missed assertions of a suite run: kept when it closed
    (`suite_tallies.judging`), counted from its rows while it runs."""
    with store.engine.connect() as conn:
        found = kept_or_folded_judging(conn, run.id, running=run.status == "running")
    models = [JudgeModelUse.of_row(row) for row in found["models"]]
    inconclusive = {str(cause or "unknown"): count for cause, count in found["inconclusive"]}
    return RunJudging(
        models=models, inconclusive=inconclusive, missed=[(name, count) for name, count in found["missed"]]
    )


def runs_pass_rates(store: Store, runs: Sequence[SuiteRunInfo]) -> dict[str, float | None]:
    """Each suite run's pass rate over its counted eval runs (`Store.pass_rates`)."""
    return store.pass_rates(runs)


def first_misses(
    store: Store, suite_run_id: str, eval_ids: Sequence[str] | None = None
) -> dict[tuple[str, int], AssertionResult]:
    """The first failed assertion of each eval run that missed (of `eval_ids` alone when given: a page of the run
    page's lines), by `(eval id, run index)`.

    With the pass flags of its judges, so its `shortfall()` reads as in the HTML report (`judge said fail`).
    """
    ranked = (
        select(
            eval_runs.c.eval_id,
            eval_runs.c.run_index,
            assertions.c.id,
            assertions.c.name,
            assertions.c.severity,
            assertions.c.score,
            assertions.c.threshold,
            func.row_number().over(partition_by=assertions.c.eval_run_id, order_by=assertions.c.position).label("n"),
        )
        .join(eval_runs, eval_runs.c.id == assertions.c.eval_run_id)
        .where(
            eval_runs.c.suite_run_id == suite_run_id,
            eval_runs.c.outcome.in_(("failed", "scored")),
            assertions.c.state == "failed",
            *([] if eval_ids is None else [eval_runs.c.eval_id.in_(list(eval_ids))]),
        )
        .subquery()
    )
    with store.engine.connect() as conn:
        rows = conn.execute(select(ranked).where(ranked.c.n == 1)).all()
        flags = conn.execute(
            select(judge_calls.c.assertion_id, judge_calls.c.score, judge_calls.c.passed)
            .where(judge_calls.c.assertion_id.in_(select(ranked.c.id).where(ranked.c.n == 1)))
            .order_by(judge_calls.c.assertion_id, judge_calls.c.position)
        ).all()
    calls: dict[int, list[JudgeCall]] = {}
    for assertion_id, score, passed in flags:
        calls.setdefault(assertion_id, []).append(JudgeCall(model="", score=score, passed=passed))
    return {
        (eval_id, run_index): AssertionResult(
            name=name, severity=severity, score=score, threshold=threshold, state="failed",
            judge_calls=calls.get(assertion_id, []),
        )
        for eval_id, run_index, assertion_id, name, severity, score, threshold, _ in rows
    }  # fmt: skip


def variant_scores(
    store: Store, suite_run_id: str, eval_ids: Sequence[str]
) -> dict[tuple[str, int], list[tuple[str, float | None]]]:
    """The `(name, score)` of every assertion of these evals' runs (those with variants), by `(eval id, run index)`.

    Selected by eval id: a JSON column's missing value may be stored as JSON `null`, not SQL NULL.
    """
    query = (
        select(eval_runs.c.eval_id, eval_runs.c.run_index, assertions.c.name, assertions.c.score)
        .join(assertions, assertions.c.eval_run_id == eval_runs.c.id)
        .where(eval_runs.c.suite_run_id == suite_run_id, eval_runs.c.eval_id.in_(list(eval_ids)))
        .order_by(eval_runs.c.id, assertions.c.position)
    )
    found: dict[tuple[str, int], list[tuple[str, float | None]]] = {}
    with store.engine.connect() as conn:
        for eval_id, run_index, name, score in conn.execute(query):
            found.setdefault((eval_id, run_index), []).append((name, score))
    return found


def eval_runs_of(store: Store, suite_run_id: str, eval_id: str) -> list[EvalRunInfo]:
    """The summaries of one eval's runs in a suite run, in run order (by the eval runs' key, not the whole run)."""
    query = (
        select(eval_runs)
        .where(eval_runs.c.suite_run_id == suite_run_id, eval_runs.c.eval_id == eval_id)
        .order_by(eval_runs.c.run_index)
    )
    with store.engine.connect() as conn:
        return [run_summary(row) for row in conn.execute(query).mappings()]


def varied_runs(store: Store, suite_run_id: str, eval_ids: Sequence[str]) -> list[EvalRunInfo]:
    """The runs of these evals (those that ran with variants) that had a variant, in plan order of their ids."""
    query = (
        select(eval_runs)
        .where(eval_runs.c.suite_run_id == suite_run_id, eval_runs.c.eval_id.in_(list(eval_ids)))
        .order_by(eval_runs.c.eval_id, eval_runs.c.run_index)
    )
    order = {eval_id: n for n, eval_id in enumerate(eval_ids)}
    with store.engine.connect() as conn:
        rows = sorted(conn.execute(query).mappings(), key=lambda r: (order[r["eval_id"]], r["run_index"]))
    return [summary for summary in map(run_summary, rows) if summary.variant]


def score_history(store: Store, eval_id: str, *, limit: int = 30) -> ScoreHistory:
    """The eval's assertion scores in the last `limit` suite runs it ran in (oldest first)."""
    history = ScoreHistory()
    with store.engine.connect() as conn:
        history.runs = suite_runs_with(conn, eval_id, limit)[::-1]
        if not history.runs:
            return history
        rows = conn.execute(
            select(eval_runs.c.suite_run_id, assertions.c.name, assertions.c.score, assertions.c.state)
            .join(assertions, assertions.c.eval_run_id == eval_runs.c.id)
            .where(eval_runs.c.eval_id == eval_id, eval_runs.c.suite_run_id.in_([i for i, _ in history.runs]))
            .order_by(eval_runs.c.id, assertions.c.position)
        ).all()
    _fold_cells(history, rows)
    return history


def _fold_cells(history: ScoreHistory, rows: Sequence[tuple[str, str, float | None, str]]) -> None:
    sums: dict[tuple[str, str], list[float]] = {}
    states: dict[tuple[str, str], str] = {}
    seen: dict[str, None] = {}
    for suite_run_id, name, score, state in rows:
        seen.setdefault(name)
        key = (name, suite_run_id)
        if score is not None:
            sums.setdefault(key, []).append(score)
        if _STATE_RANK.get(state, 0) >= _STATE_RANK.get(states.get(key, "passed"), 0):
            states[key] = state
    history.names = list(seen)
    for key, state in states.items():
        scores = sums.get(key)
        history.cells[key] = ScoreCell(score=sum(scores) / len(scores) if scores else None, state=state)


def previous_run(store: Store, run: SuiteRunInfo) -> str | None:
    """The id of the suite run started just before `run` (the natural baseline to compare with)."""
    with store.engine.connect() as conn:
        return _previous(conn, run)


def run_info(store: Store, ref: str) -> SuiteRunInfo:
    """A suite run's header and totals alone (no eval runs; a running one's counted so far), or a 404 page when
    `ref` names none."""
    with store.engine.connect() as conn:
        return _info(conn, ref)


def compared_runs(
    store: Store, head_ref: str, base_ref: str | None, fallback: str
) -> tuple[SuiteRunInfo, SuiteRunInfo]:
    """The compare page's pair, read on one connection (its refresh reads them every 2 s while a diff computes):
    `head_ref`'s run and `base_ref`'s, by default the run started just before the head, else `fallback`; a 404
    page when either names none."""
    with store.engine.connect() as conn:
        head = _info(conn, head_ref)
        return head, _info(conn, base_ref or _previous(conn, head) or fallback)


def _info(conn: Connection, ref: str) -> SuiteRunInfo:
    try:
        return header(conn, resolve(conn, ref))
    except RunNotFound as exc:
        raise HTTPException(404, str(exc)) from None


def _previous(conn: Connection, run: SuiteRunInfo) -> str | None:
    query = (
        select(suite_runs.c.id)
        .where(
            (suite_runs.c.started_at < run.started_at)
            | ((suite_runs.c.started_at == run.started_at) & (suite_runs.c.id > run.id))
        )
        .order_by(suite_runs.c.started_at.desc(), suite_runs.c.id)
        .limit(1)
    )
    found = conn.execute(query).scalar()
    return None if found is None else str(found)


def attack_verdicts(store: Store, suite_run_id: str) -> list[tuple[str | None, dict[str, str] | None, str]]:
    """`(case id, variant, state)` of every `resisted attack` assertion of the suite run (`niceeval.attacks`)."""
    query = attack_verdicts_query(suite_run_id)
    with store.engine.connect() as conn:
        return [(case_id, variant, state) for case_id, variant, state in conn.execute(query)]


def attack_verdicts_query(suite_run_id: str) -> Select[str, Any, str]:
    """`attack_verdicts`' query. The name is written into the SQL, not bound: the store's partial index of these
    verdicts (`ix_assertions_resisted`) serves a query whose WHERE names its value, so a suite run without attacks
    costs one index probe, not a scan of every assertion in the store."""
    return (
        select(eval_runs.c.case_id, eval_runs.c.variant, assertions.c.state)
        .join(assertions, assertions.c.eval_run_id == eval_runs.c.id)
        .where(eval_runs.c.suite_run_id == suite_run_id, assertions.c.name == literal(RESISTED, literal_execute=True))
    )
