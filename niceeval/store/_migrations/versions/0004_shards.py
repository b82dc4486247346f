"""Suite runs written by shards (`--shard I/N --run-id ID`): shard count, shards done, plan digest, `suite_shards`.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("suite_runs", sa.Column("shard_count", sa.Integer(), nullable=True))  # ADD COLUMN: no copy
    op.add_column("suite_runs", sa.Column("shards_done", sa.Integer(), server_default="0", nullable=False))
    op.add_column("suite_runs", sa.Column("plan_digest", sa.String(length=64), nullable=True))
    op.create_table(
        "suite_shards",
        sa.Column("suite_run_id", sa.String(length=32), nullable=False),
        sa.Column("shard", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("duration_s", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["suite_run_id"],
            ["suite_runs.id"],
            name=op.f("fk_suite_shards_suite_run_id_suite_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("suite_run_id", "shard", name=op.f("pk_suite_shards")),
    )


def downgrade() -> None:
    op.drop_table("suite_shards")
    with op.batch_alter_table("suite_runs") as table:
        table.drop_column("plan_digest")
        table.drop_column("shards_done")
        table.drop_column("shard_count")
