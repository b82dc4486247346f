"""Reading the store back: suite runs, their eval runs, full records, an eval's history."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from pydantic_core import from_json
from sqlalchemy import Connection, RowMapping, func, or_, select

from niceeval._core.outcome import Outcome
from niceeval._core.results import RunResult
from niceeval._core.summary import PlannedEval
from niceeval.stats import clustered_rate
from niceeval.store._driver import session_of
from niceeval.store._models import EvalRunInfo, PlannedEvalInfo, SuiteRunDetail, SuiteRunInfo, TurnRecord
from niceeval.store._open import StoreError
from niceeval.store._rows import from_event_rows, from_rows
from niceeval.store._schema import (
    assertions,
    eval_runs,
    events,
    judge_calls,
    spans,
    suite_runs,
    suite_tallies,
    turns,
)
from niceeval.store._shards import list_shards
from niceeval.store._statements import totals

_CHUNK = 200  # eval runs loaded per round trip when streaming full records
_PAGE = 500  # suite runs looked through per round trip for an eval's history


class RunNotFound(StoreError):
    """No suite run (or eval run) matches what was asked; the message says what to do."""


def _info(row: RowMapping) -> SuiteRunInfo:
    data = dict(row)
    data["errors"] = data["errors"] or []
    return SuiteRunInfo.model_validate(data)


def list_runs(
    conn: Connection,
    *,
    limit: int = 20,
    offset: int = 0,
    status: Sequence[str] | None = None,
    experiment: str | None = None,
) -> list[SuiteRunInfo]:
    """Suite runs, latest first (only `experiment`'s, when given). Totals of a run still `running` are counted from
    what it stored so far."""
    query = select(suite_runs).order_by(suite_runs.c.started_at.desc(), suite_runs.c.id).limit(limit).offset(offset)
    if status is not None:
        query = query.where(suite_runs.c.status.in_(list(status)))
    if experiment is not None:
        query = query.where(suite_runs.c.experiment == experiment)
    found = []
    for row in conn.execute(query).mappings():
        info = _info(row)
        if info.status == "running":
            info = info.model_copy(update=totals(session_of(conn), info.id))
        found.append(info)
    return found


_LATEST_FIRST = select(suite_runs.c.id).order_by(suite_runs.c.started_at.desc(), suite_runs.c.id)
"""Suite runs in the order `niceeval runs` lists them (latest first; a tie in start time by id)."""


def resolve(conn: Connection, ref: str) -> str:
    """The id of the suite run `ref` names: an id, a unique prefix of one (4+ characters), or `latest`; any of them
    followed by `~N` names the suite run started N before that one (`latest~1`: the one before the latest)."""
    back = re.fullmatch(r"(.+)~([0-9]+)", ref)
    if back is None:
        return _named(conn, ref)
    return _before(conn, _named(conn, back[1]), int(back[2]), ref)


def _named(conn: Connection, ref: str) -> str:
    if ref == "latest":
        found = conn.execute(_LATEST_FIRST.limit(1)).scalar()
        if found is None:
            raise RunNotFound("the results store holds no suite run yet; `niceeval run` makes one.")
        return str(found)
    if conn.execute(select(suite_runs.c.id).where(suite_runs.c.id == ref)).scalar() is not None:
        return ref
    matches = []
    if len(ref) >= 4:
        like = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        matches = list(conn.execute(select(suite_runs.c.id).where(suite_runs.c.id.like(like, escape="\\")).limit(3)))
    if len(matches) == 1:
        return str(matches[0][0])
    if matches:
        raise RunNotFound(f"{ref!r} matches several suite runs; give more of the id (`niceeval runs` lists them).")
    raise RunNotFound(f"no suite run {ref!r} in the results store; `niceeval runs` lists them.")


def _before(conn: Connection, suite_run_id: str, steps: int, ref: str) -> str:
    """The suite run `steps` places after `suite_run_id` in `niceeval runs`' order (started before it)."""
    if steps == 0:
        return suite_run_id
    started = select(suite_runs.c.started_at).where(suite_runs.c.id == suite_run_id).scalar_subquery()
    older = or_(
        suite_runs.c.started_at < started, (suite_runs.c.started_at == started) & (suite_runs.c.id > suite_run_id)
    )
    found = conn.execute(_LATEST_FIRST.where(older).offset(steps - 1).limit(1)).scalar()
    if found is None:
        count = conn.execute(select(func.count()).select_from(suite_runs).where(older)).scalar_one()
        raise RunNotFound(
            f"{ref!r} goes back {steps} suite runs, but the results store holds {count} started before "
            f"{suite_run_id}; `niceeval runs` lists them."
        )
    return str(found)


def get_run(conn: Connection, suite_run_id: str) -> SuiteRunDetail:
    """A suite run's header, plan and eval run summaries (in plan order, then run index)."""
    info = header(conn, suite_run_id)
    plan = planned(conn, suite_run_id)
    order = {p.id: i for i, p in enumerate(plan)}
    summaries = [run_summary(r) for r in conn.execute(_run_rows(suite_run_id)).mappings()]
    summaries.sort(key=lambda s: (order.get(s.eval_id, len(order)), s.run_index))
    evals = [
        PlannedEvalInfo(eval_id=p.id, file=p.file, line=p.line, tags=list(p.tags), runs=p.runs, cluster=p.cluster)
        for p in plan
    ]
    shards = list_shards(conn, suite_run_id) if info.shard_count is not None else []
    return SuiteRunDetail(run=info, evals=evals, eval_runs=summaries, shards=shards)


def header(conn: Connection, suite_run_id: str) -> SuiteRunInfo:
    """A suite run's header and totals (those of a run still `running` counted from what it stored so far)."""
    row = conn.execute(select(suite_runs).where(suite_runs.c.id == suite_run_id)).mappings().first()
    if row is None:
        raise RunNotFound(f"no suite run {suite_run_id!r} in the results store; `niceeval runs` lists them.")
    info = _info(row)
    if info.status == "running":
        info = info.model_copy(update=totals(session_of(conn), suite_run_id))
    return info


def evals_with_case(conn: Connection, suite_run_id: str, prefixes: Sequence[str]) -> list[str]:
    """The ids of the evals of a suite run with a run whose case id starts with one of `prefixes`, sorted: the few
    evals to read in full, found without reading every eval run of a large suite run."""
    if not prefixes:
        return []
    query = (
        select(eval_runs.c.eval_id)
        .distinct()
        .where(eval_runs.c.suite_run_id == suite_run_id)
        .where(or_(*(eval_runs.c.case_id.startswith(prefix, autoescape=True) for prefix in prefixes)))
    )
    return sorted(conn.execute(query).scalars())


def planned(conn: Connection, suite_run_id: str) -> list[PlannedEval]:
    """The evals a suite run planned, in plan order.

    Read through the driver (a report of 100,000 evals reads 100,000 of them): no SQLAlchemy row processing, and
    the tags' JSON decoded only when there are some.
    """
    return list(walk_planned(conn, suite_run_id))


def walk_planned(conn: Connection, suite_run_id: str) -> Iterator[PlannedEval]:
    """The evals a suite run planned, in plan order, streamed (`Session.stream`): each walk reads them again."""
    session = session_of(conn)
    tags = "tags::text" if session.dialect.kind == "postgresql" else "tags"  # psycopg would decode a `json` column
    query = (
        f"SELECT eval_id, file, line, {tags}, runs, cluster FROM suite_evals WHERE suite_run_id = ? ORDER BY position"
    )
    files: dict[str, str] = {}  # one string per file, not one per eval
    for eval_id, file, line, text, runs, cluster in session.stream(query, (suite_run_id,)):
        file = files.setdefault(file, file)
        yield PlannedEval(id=eval_id, file=file, line=line, tags=planned_tags(text), runs=runs, cluster=cluster)


def planned_count(conn: Connection, suite_run_id: str) -> int:
    """How many evals a suite run planned."""
    query = "SELECT count(*) FROM suite_evals WHERE suite_run_id = ?"
    return int(session_of(conn).execute(query, (suite_run_id,)).fetchone()[0])


def shared_clusters(conn: Connection, suite_run_id: str) -> dict[str, int]:
    """The planned evals of each cluster that is not an eval itself (a case's variants, `define_eval(cluster=...)`),
    counted by the database: what `SuiteTotals` holds a cluster's sums open for."""
    query = (
        "SELECT cluster, count(*) FROM suite_evals WHERE suite_run_id = ? AND cluster IS NOT NULL "
        "AND cluster <> eval_id GROUP BY cluster"
    )
    return {cluster: int(count) for cluster, count in session_of(conn).execute(query, (suite_run_id,))}


def planned_tags(text: str) -> tuple[str, ...]:
    """A planned eval's tags from their stored JSON text."""
    return () if text == "[]" else tuple(from_json(text))


def outcomes(conn: Connection, suite_run_id: str) -> dict[tuple[str, int], Outcome]:
    """The outcome of every eval run stored in a suite run, by `(eval_id, run_index)`."""
    query = select(eval_runs.c.eval_id, eval_runs.c.run_index, eval_runs.c.outcome).where(
        eval_runs.c.suite_run_id == suite_run_id
    )
    return {(r.eval_id, r.run_index): r.outcome for r in conn.execute(query)}


def _run_rows(suite_run_id: str) -> Any:
    return select(eval_runs).where(eval_runs.c.suite_run_id == suite_run_id)


def run_summary(row: RowMapping) -> EvalRunInfo:
    """An `eval_runs` row as its summary line."""
    error = row["error"]
    return EvalRunInfo(
        suite_run_id=row["suite_run_id"],
        eval_id=row["eval_id"],
        run_index=row["run_index"],
        outcome=row["outcome"],
        finished_at=row["finished_at"],
        duration_s=row["duration_s"],
        error=f"{error['type']}: {error['message']}" if error else None,
        agent_cost=row["agent_cost"],
        judge_cost=row["judge_cost"],
        tokens=row["agent_tokens"] + row["judge_tokens"],
        case_id=row["case_id"],
        variant=row["variant"],
        points=row["points"],
        points_possible=row["points_possible"],
        failure=row.get("failure_class"),
        attempts=row.get("attempts") or 1,
        provenance=row["provenance"],
        carried_from=row["carried_from"],
        carried_index=row["carried_index"],
        identity=row["identity"],
        error_kind=error.get("kind") if error else None,
    )


def pass_rates(conn: Connection, runs: Sequence[SuiteRunInfo]) -> dict[str, float | None]:
    """Each suite run's pass rate: the mean of its evals' rates over their counted runs (`scored` too unless
    strict), each eval weighing the same (`niceeval.stats.clustered_rate`). A closed suite run's is kept in
    `suite_tallies`; a running one's is counted from its eval runs."""
    closed = [run.id for run in runs if run.status != "running"]
    kept = select(suite_tallies.c.suite_run_id, suite_tallies.c.pass_rate).where(
        suite_tallies.c.suite_run_id.in_(closed)
    )
    rates: dict[str, float | None] = {str(i): rate for i, rate in conn.execute(kept)}
    counting = [run for run in runs if run.id not in rates]
    if not counting:
        return rates
    query = (
        select(eval_runs.c.suite_run_id, eval_runs.c.eval_id, eval_runs.c.outcome, func.count())
        .where(
            eval_runs.c.suite_run_id.in_(list({run.id for run in counting})),
            or_(eval_runs.c.failure_class.is_(None), eval_runs.c.failure_class != "infra"),  # not counted
        )
        .group_by(eval_runs.c.suite_run_id, eval_runs.c.eval_id, eval_runs.c.outcome)
    )
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for suite_run_id, eval_id, outcome, count in conn.execute(query):
        counts.setdefault(suite_run_id, {}).setdefault(eval_id, {})[outcome] = int(count)
    for run in counting:
        per_eval = [
            (seen.get("passed", 0) + (0 if run.strict else seen.get("scored", 0)),
             seen.get("passed", 0) + seen.get("scored", 0) + seen.get("failed", 0))
            for seen in counts.get(run.id, {}).values()
        ]  # fmt: skip
        rates[run.id] = clustered_rate(per_eval).value
    return rates


def history(conn: Connection, eval_id: str, *, limit: int = 50) -> list[EvalRunInfo]:
    """The eval's runs across suite runs, the latest suite run's first (each suite run's in run order)."""
    order = {suite_run_id: n for n, (suite_run_id, _) in enumerate(suite_runs_with(conn, eval_id, limit))}
    if not order:
        return []
    query = select(eval_runs).where(eval_runs.c.suite_run_id.in_(list(order)), eval_runs.c.eval_id == eval_id)
    rows = sorted(conn.execute(query).mappings(), key=lambda r: (order[r["suite_run_id"]], r["run_index"]))
    return [run_summary(r) for r in rows[:limit]]


def suite_runs_with(conn: Connection, eval_id: str, limit: int) -> list[tuple[str, datetime]]:
    """`(id, started_at)` of the latest `limit` suite runs holding a run of `eval_id`, latest first.

    Suite runs are read newest first, a page at a time, and each page is looked up by the eval runs' key
    `(suite_run_id, eval_id, ...)`: no index leads with `eval_id` (see `_schema.eval_runs`).
    """
    found: list[tuple[str, datetime]] = []
    newest_first = select(suite_runs.c.id, suite_runs.c.started_at).order_by(
        suite_runs.c.started_at.desc(), suite_runs.c.id.desc()
    )
    offset = 0
    while len(found) < limit:
        page = conn.execute(newest_first.limit(_PAGE).offset(offset)).all()
        if not page:
            break
        held = set(
            conn.execute(
                select(eval_runs.c.suite_run_id)
                .where(eval_runs.c.suite_run_id.in_([row[0] for row in page]), eval_runs.c.eval_id == eval_id)
                .distinct()
            ).scalars()
        )
        found += [(row[0], row[1]) for row in page if row[0] in held]
        offset += _PAGE
    return found[:limit]


def results(
    conn: Connection, suite_run_id: str, *, eval_ids: Sequence[str] | None = None, run_index: int | None = None
) -> Iterator[RunResult]:
    """Full records of a suite run's eval runs (optionally some evals, one run index), a chunk at a time."""
    query = _run_rows(suite_run_id).order_by(eval_runs.c.id)
    if eval_ids is not None:
        query = query.where(eval_runs.c.eval_id.in_(list(eval_ids)))
    if run_index is not None:
        query = query.where(eval_runs.c.run_index == run_index)
    rows = conn.execute(query).mappings().all()
    for start in range(0, len(rows), _CHUNK):
        chunk = rows[start : start + _CHUNK]
        loaded = _load(conn, [r for r in chunk if r["provenance"] == "executed"])
        carried = _load_carried(conn, [r for r in chunk if r["provenance"] != "executed"])
        by_slot = {(r.eval_id, r.run_index): r for r in [*loaded, *carried]}
        yield from (by_slot[r["eval_id"], r["run_index"]] for r in chunk)


def _load_carried(conn: Connection, rows: Sequence[RowMapping]) -> list[RunResult]:
    """Carried and accepted slots in full: the records of the runs they point to, as this suite run's slots."""
    found = []
    for row in rows:
        source = (
            conn.execute(
                select(eval_runs).where(
                    eval_runs.c.suite_run_id == row["carried_from"],
                    eval_runs.c.eval_id == row["eval_id"],
                    eval_runs.c.run_index == row["carried_index"],
                )
            )
            .mappings()
            .first()
        )
        if source is None:  # the suite run it came from was deleted (`niceeval gc`): its summary is what is left
            found.append(from_rows(row, (), {}, ()))
            continue
        record = next(iter(_load(conn, [source])))
        found.append(
            record.model_copy(
                update={
                    "run_index": row["run_index"],
                    "identity": row["identity"],
                    "provenance": row["provenance"],
                    "carried_from": row["carried_from"],
                    "carried_index": row["carried_index"],
                }
            )
        )
    return found


def _load(conn: Connection, rows: Sequence[RowMapping]) -> Iterator[RunResult]:
    ids = [r["id"] for r in rows]
    by_run: dict[int, list[RowMapping]] = {i: [] for i in ids}
    query = select(assertions).where(assertions.c.eval_run_id.in_(ids)).order_by(assertions.c.position)
    for a in conn.execute(query).mappings():
        by_run[a["eval_run_id"]].append(a)
    assertion_ids = [a["id"] for group in by_run.values() for a in group]
    calls: dict[int, list[RowMapping]] = {}
    if assertion_ids:
        query = select(judge_calls).where(judge_calls.c.assertion_id.in_(assertion_ids))
        for c in conn.execute(query.order_by(judge_calls.c.position)).mappings():
            calls.setdefault(c["assertion_id"], []).append(c)
    stream: dict[int, list[RowMapping]] = {i: [] for i in ids}
    for e in conn.execute(select(events).where(events.c.eval_run_id.in_(ids)).order_by(events.c.seq)).mappings():
        stream[e["eval_run_id"]].append(e)
    traces: dict[int, list[RowMapping]] = {i: [] for i in ids}
    for s in conn.execute(select(spans).where(spans.c.eval_run_id.in_(ids)).order_by(spans.c.position)).mappings():
        traces[s["eval_run_id"]].append(s)
    for row in rows:
        yield from_rows(row, by_run[row["id"]], calls, stream[row["id"]], traces[row["id"]])


def eval_run(conn: Connection, suite_run_id: str, eval_id: str, run_index: int = 0) -> RunResult:
    """One eval run in full: assertions with judge calls, events, spend."""
    found = list(results(conn, suite_run_id, eval_ids=[eval_id], run_index=run_index))
    if not found:
        raise RunNotFound(f"suite run {suite_run_id} has no run {run_index} of eval {eval_id!r}.")
    return found[0]


def trace_results(conn: Connection, trace_id: str) -> list[RunResult]:
    """Every stored eval run of trace `trace_id` (online results: their case id is the trace id), latest first."""
    found = conn.execute(
        select(eval_runs.c.suite_run_id, eval_runs.c.eval_id, eval_runs.c.run_index)
        .where(eval_runs.c.case_id == trace_id)
        .order_by(eval_runs.c.id.desc())
    ).all()
    return [eval_run(conn, suite_run_id, eval_id, run_index) for suite_run_id, eval_id, run_index in found]


def recorded_turns(conn: Connection, suite_run_id: str, eval_id: str, run_index: int) -> list[TurnRecord]:
    """The turns of one eval run, each with the events it spans (what `rescore` replays)."""
    run = conn.execute(
        select(eval_runs.c.id).where(
            eval_runs.c.suite_run_id == suite_run_id, eval_runs.c.eval_id == eval_id, eval_runs.c.run_index == run_index
        )
    ).scalar()
    if run is None:
        raise RunNotFound(f"suite run {suite_run_id} has no run {run_index} of eval {eval_id!r}.")
    rows = conn.execute(select(turns).where(turns.c.eval_run_id == run).order_by(turns.c.position)).mappings().all()
    stream = list(conn.execute(select(events).where(events.c.eval_run_id == run).order_by(events.c.seq)).mappings())
    recorded = from_event_rows(stream)
    return [
        TurnRecord(
            sent=t["sent"],
            reply=t["reply"],
            data=t["data"],
            events=[e for e in recorded if t["first_seq"] <= e.seq <= t["last_seq"]],
        )
        for t in rows
    ]
