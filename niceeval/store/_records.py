"""Where each eval run of a suite run keeps its record: its own row when it executed there, else the row it
carries or accepts (an experiment's slot run before under the same identity holds only a summary row).

Cost, outcome and duration are on every slot's row; assertions and events are only on the row that executed.
Reads that join them (a case's turn latencies, its assertions' scores) go through `slot_records`, so a suite run
that carried its attempts is measured on them, as if it had run them.
"""

from __future__ import annotations

from sqlalchemy import Subquery, and_, func, select

from niceeval.store._schema import eval_runs


def slot_records(suite_run_id: str) -> Subquery:
    """One row per eval run of the suite run: its `eval_id`, `outcome`, and `record_id`, the id of the eval run
    row holding its assertions and events (None when that row is gone: `niceeval gc` deleted its suite run)."""
    slot, record = eval_runs.alias("slot"), eval_runs.alias("record")
    pointed = and_(
        record.c.suite_run_id == func.coalesce(slot.c.carried_from, slot.c.suite_run_id),
        record.c.eval_id == slot.c.eval_id,
        record.c.run_index == func.coalesce(slot.c.carried_index, slot.c.run_index),
    )
    return (
        select(slot.c.eval_id, slot.c.outcome, record.c.id.label("record_id"))
        .select_from(slot.outerjoin(record, pointed))
        .where(slot.c.suite_run_id == suite_run_id)
        .subquery()
    )
