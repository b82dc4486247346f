"""Suite runs written by shards (`--run-id`): create-or-join, finish a shard, read the shards back.

Every shard of one `--run-id` runs the same transaction at start: take the suite run's lock, create the suite run
with the whole plan if it is not there yet (else check the shard fits it), then record the shard. The lock makes
create-or-join race-free when the shards start at the same moment: SQLite writers hold the database's write lock
from `BEGIN IMMEDIATE`; PostgreSQL takes a transaction-scoped advisory lock keyed on the suite run id, and under
READ COMMITTED the next holder's reads see what the previous one committed. Finishing a shard takes the same lock,
so exactly one shard (the last) sees every shard finished and closes the suite run, totals counted from the
stored eval runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, func, insert, select, update

from niceeval._core.summary import PlannedEval
from niceeval.store._driver import session_of
from niceeval.store._kept_sums import keep_sums
from niceeval.store._models import ShardInfo, SuiteRunStart
from niceeval.store._open import StoreError
from niceeval.store._schema import suite_runs, suite_shards
from niceeval.store._statements import insert_suite, totals
from niceeval.store._suite_run import ShardJoin, SuiteEnd
from niceeval.store._tallies import keep_tallies


def lock_suite_run(conn: Connection, suite_run_id: str) -> None:
    """Serialise the shard bookkeeping of one suite run until the transaction ends."""
    if conn.dialect.name == "postgresql":  # SQLite: the writer's BEGIN IMMEDIATE already holds the write lock
        digest = hashlib.blake2b(f"niceeval suite run {suite_run_id}".encode(), digest_size=8).digest()
        conn.execute(select(func.pg_advisory_xact_lock(int.from_bytes(digest, "big", signed=True))))


def _where(suite_run_id: str, shard: int) -> Any:
    return (suite_shards.c.suite_run_id == suite_run_id) & (suite_shards.c.shard == shard)


def join_shard(
    conn: Connection, start: SuiteRunStart, plan: Sequence[PlannedEval], *, shard: int, count: int, digest: str
) -> ShardJoin:
    """Create suite run `start.id` (with the whole `plan`) or join it, as shard `shard` of `count`.

    Raises:
        StoreError: the suite run is not sharded, has another shard count or plan, or this shard already finished.
    """
    lock_suite_run(conn, start.id)
    head = conn.execute(
        select(suite_runs.c.shard_count, suite_runs.c.plan_digest).where(suite_runs.c.id == start.id)
    ).first()
    if head is None:
        insert_suite(session_of(conn), start, plan, shard_count=count, plan_digest=digest)
    else:
        _check_fits(start.id, head.shard_count, head.plan_digest, shard=shard, count=count, digest=digest)
    row = conn.execute(select(suite_shards).where(_where(start.id, shard))).mappings().first()
    if row is None:
        conn.execute(
            insert(suite_shards).values(
                suite_run_id=start.id, shard=shard, status="running", started_at=datetime.now(UTC), attempts=1
            )
        )
        return ShardJoin(created=head is None, attempt=1)
    if row["status"] == "finished":
        raise StoreError(
            f"shard {shard}/{count} of suite run {start.id} already finished: its runs are stored, and a shard "
            f"reports once. `niceeval report {start.id}` shows the suite run, `niceeval run --rerun-failed "
            f"{start.id}` reruns its failed evals into a new one, or give this run a new --run-id."
        )
    attempt = row["attempts"] + 1
    conn.execute(
        update(suite_shards).where(_where(start.id, shard)).values(status="running", finished_at=None, attempts=attempt)
    )
    return ShardJoin(created=False, attempt=attempt)


def _check_fits(
    suite_run_id: str, shards: int | None, planned: str | None, *, shard: int, count: int, digest: str
) -> None:
    if shards is None:
        raise StoreError(
            f"suite run {suite_run_id} already exists and was not started with --run-id, so shards cannot join it: "
            f"give this run another --run-id (`niceeval run --resume {suite_run_id}` completes that one)."
        )
    if shards != count:
        raise StoreError(
            f"suite run {suite_run_id} is split into {shards} shards, and this run says --shard {shard}/{count}: "
            f"give every shard of one --run-id the same count (--shard I/{shards}), or use another --run-id."
        )
    if planned != digest:
        raise StoreError(
            f"shard {shard}/{count} plans other eval runs than suite run {suite_run_id} (other evals, cases or "
            "variants, or other --runs, --strict or --min-pass-rate): run every shard of one --run-id with the same "
            "command on the same commit, or use another --run-id."
        )


def finish_shard(conn: Connection, suite_run_id: str, shard: int, end: SuiteEnd) -> None:
    """Close one shard; the last shard to finish closes the suite run (status, exit code, totals).

    The suite run's errors are the union of its shards' (load errors repeat in every shard), its duration is the
    longest shard's (they run side by side), and its exit code follows from its errors and the verdicts counted
    from the stored eval runs, as `niceeval run` would have decided it in one process.
    """
    lock_suite_run(conn, suite_run_id)
    now = datetime.now(UTC)
    conn.execute(
        update(suite_shards)
        .where(_where(suite_run_id, shard))
        .values(
            status=end.status,
            finished_at=now,
            exit_code=end.exit_code,
            duration_s=func.coalesce(suite_shards.c.duration_s, 0.0) + end.duration_s,  # a retry adds its own time
        )
    )
    head = conn.execute(
        select(suite_runs.c.shard_count, suite_runs.c.errors).where(suite_runs.c.id == suite_run_id)
    ).one()
    rows = conn.execute(
        select(suite_shards.c.status, suite_shards.c.duration_s).where(suite_shards.c.suite_run_id == suite_run_id)
    ).all()
    merged: list[dict[str, str]] = list(head.errors or [])
    merged += [dict(e) for e in end.errors if e not in merged]
    values: dict[str, Any] = {
        **totals(session_of(conn), suite_run_id),
        "errors": merged,
        "shards_done": sum(r.status == "finished" for r in rows),
        "duration_s": max((r.duration_s or 0.0 for r in rows), default=0.0),
    }
    if values["shards_done"] >= (head.shard_count or 1):
        exit_code = 2 if merged else 1 if values["failed"] else 0
        values.update(status="finished", finished_at=now, exit_code=exit_code)
    conn.execute(update(suite_runs).where(suite_runs.c.id == suite_run_id).values(**values))
    if values["shards_done"] >= (head.shard_count or 1):
        session = session_of(conn)
        keep_tallies(session, suite_run_id)
        keep_sums(session, suite_run_id)


def list_shards(conn: Connection, suite_run_id: str) -> list[ShardInfo]:
    """The shards of a suite run that have reported, by number."""
    query = select(suite_shards).where(suite_shards.c.suite_run_id == suite_run_id).order_by(suite_shards.c.shard)
    return [ShardInfo.model_validate(dict(row)) for row in conn.execute(query).mappings()]
