"""Experiments in the store: the slots an experiment recorded (what a new run of it may carry), acceptances
(`niceeval accept`), and renaming an experiment (its history moves with it)."""

from __future__ import annotations

from sqlalchemy import Connection, insert, select, update

from niceeval.store._models import AcceptanceInfo, EvalRunInfo
from niceeval.store._read import RunNotFound, run_summary
from niceeval.store._schema import acceptances, eval_runs, suite_runs


def slots(conn: Connection, experiment: str) -> list[EvalRunInfo]:
    """Every eval run the experiment's suite runs executed under an identity, the latest suite run's first."""
    runs = select(suite_runs.c.id, suite_runs.c.started_at).where(suite_runs.c.experiment == experiment).subquery()
    query = (
        select(eval_runs)
        .join(runs, runs.c.id == eval_runs.c.suite_run_id)
        .where(eval_runs.c.provenance == "executed", eval_runs.c.identity.is_not(None))
        .order_by(runs.c.started_at.desc(), eval_runs.c.suite_run_id, eval_runs.c.run_index)
    )
    return [run_summary(row) for row in conn.execute(query).mappings()]


def accepted(conn: Connection, experiment: str) -> list[AcceptanceInfo]:
    """The experiment's acceptances, oldest first."""
    query = select(acceptances).where(acceptances.c.experiment == experiment).order_by(acceptances.c.id)
    return [AcceptanceInfo.model_validate(dict(row)) for row in conn.execute(query).mappings()]


def accept(conn: Connection, acceptance: AcceptanceInfo) -> bool:
    """Record `acceptance` (the run it names is not touched); False when it was recorded already."""
    row = acceptance.model_dump(exclude={"accepted_at"})
    exists = conn.execute(
        select(acceptances.c.id).where(*(getattr(acceptances.c, name) == value for name, value in row.items()))
    ).first()
    if exists is not None:
        return False
    conn.execute(insert(acceptances).values(**row, accepted_at=acceptance.accepted_at))
    return True


def rename(conn: Connection, old: str, new: str) -> int:
    """Move experiment `old`'s suite runs and acceptances to `new`; how many suite runs moved.

    Raises:
        RunNotFound: `old` has no suite run and no acceptance, or `new` already has history.
    """
    held = conn.execute(select(suite_runs.c.id).where(suite_runs.c.experiment == new).limit(1)).first()
    if held is not None or conn.execute(select(acceptances.c.id).where(acceptances.c.experiment == new)).first():
        raise RunNotFound(
            f"experiment {new!r} already has runs in the results store; pick another name, or "
            f"`niceeval exp rename {new} ...` first."
        )
    moved = conn.execute(update(suite_runs).where(suite_runs.c.experiment == old).values(experiment=new)).rowcount
    taken = conn.execute(update(acceptances).where(acceptances.c.experiment == old).values(experiment=new)).rowcount
    if not moved and not taken:
        raise RunNotFound(f"no experiment {old!r} in the results store; `niceeval exp list` lists them.")
    return int(moved)
