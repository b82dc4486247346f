"""Where each eval run of a suite run keeps its record: its own row when it executed there, else the row it
carries or accepts (an experiment's slot run before under the same identity holds only a summary row).

Cost, outcome and duration are on every slot's row; assertions and events are only on the row that executed.
Reads that join them (a case's turn latencies, its assertions' scores) go through `RECORD_ID` (`slot_records`), so
a suite run that carried its attempts is measured on them, as if it had run them.

The record is found slot by slot: an executed slot is its own record, a carried one's is looked up by the eval
runs' unique key. A join on `coalesce(carried_from, suite_run_id)` would say the same, but no index serves it:
PostgreSQL hash-joins every eval run of the store to find a run's records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the run's writer closes runs through `_kept_sums`, which reads `RECORD_ID`, without SQLAlchemy
    from sqlalchemy import Subquery

RECORD_ID = (
    "CASE WHEN slot.carried_from IS NULL THEN slot.id ELSE (SELECT record.id FROM eval_runs record "
    "WHERE record.suite_run_id = slot.carried_from AND record.eval_id = slot.eval_id "
    "AND record.run_index = slot.carried_index) END"
)
"""SQL: the id of the eval run row holding the assertions and events of the slot `slot` (an `eval_runs` row), NULL
when that row is gone (`niceeval gc` deleted the suite run it carries from)."""


def slot_records(suite_run_id: str) -> Subquery:
    """One row per eval run of the suite run: its `eval_id`, `outcome`, and `record_id` (`RECORD_ID`)."""
    from sqlalchemy import Integer, literal_column, select

    from niceeval.store._schema import eval_runs

    slot = eval_runs.alias("slot")
    record_id = literal_column(RECORD_ID, Integer).label("record_id")
    return select(slot.c.eval_id, slot.c.outcome, record_id).where(slot.c.suite_run_id == suite_run_id).subquery()
