"""`niceeval gc`: deleting old suite runs (their eval runs and everything under them go by cascade)."""

from __future__ import annotations

from sqlalchemy import Connection, delete, func, select

from niceeval.store._driver import session_of
from niceeval.store._kept_diffs import forget_all
from niceeval.store._kept_sums import carrying, forget, keep_again
from niceeval.store._schema import eval_runs, suite_runs


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
    session = session_of(conn)
    carriers = carrying(session, doomed)
    conn.execute(delete(suite_runs).where(suite_runs.c.id.in_(doomed)))
    forget(session, doomed)
    forget_all(conn)
    keep_again(session, carriers)  # their kept scores counted records that are now gone, as a sum does
    return len(doomed), int(runs)
