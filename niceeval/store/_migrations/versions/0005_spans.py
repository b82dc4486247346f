"""The runs' OpenTelemetry spans: `spans` (one row per span, its `SpanRecord` as JSON, in start order).

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "spans",
        sa.Column("eval_run_id", sa.BigInteger(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["eval_run_id"], ["eval_runs.id"], name=op.f("fk_spans_eval_run_id_eval_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("eval_run_id", "position", name=op.f("pk_spans")),
    )


def downgrade() -> None:
    op.drop_table("spans")
