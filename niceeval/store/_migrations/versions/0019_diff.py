"""Each timed reply's turn latency in a column of `events` with a partial index: `diff` of two 100,000-eval runs
read it from every message event's JSON payload (a quarter of a second a side, even when no turn was timed).

Revision ID: 0019_diff
Revises: 0018_cmp
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019_diff"
down_revision = "0018_cmp"
branch_labels = None
depends_on = None

TIMED = sa.text("latency IS NOT NULL")
_FROM_PAYLOAD = {
    "sqlite": "CAST(json_extract(payload, '$.latency') AS REAL)",
    "postgresql": "CAST(payload ->> 'latency' AS DOUBLE PRECISION)",
}
"""A message event's stored latency, read from its payload as `_costs.case_usage` read it before."""


def upgrade() -> None:
    op.add_column("events", sa.Column("latency", sa.Float(), nullable=True))  # ADD COLUMN: no copy
    from_payload = _FROM_PAYLOAD[op.get_bind().dialect.name]
    op.execute(f"UPDATE events SET latency = {from_payload} WHERE type = 'message' AND {from_payload} IS NOT NULL")
    op.create_index("ix_events_latency", "events", ["eval_run_id", "latency"], sqlite_where=TIMED,
                    postgresql_where=TIMED)  # fmt: skip


def downgrade() -> None:
    op.drop_index("ix_events_latency", table_name="events")
    with op.batch_alter_table("events") as batch:
        batch.drop_column("latency")
