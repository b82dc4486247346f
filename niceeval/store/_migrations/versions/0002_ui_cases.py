"""Test cases written in the viewer (`ui_cases`, every version in `ui_case_versions`); sandbox workspace diffs.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("eval_runs", sa.Column("workspace_diff", sa.Text(), nullable=True))  # ADD COLUMN: no copy
    op.create_table(
        "ui_cases",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("content", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deleted", sa.Boolean(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_ui_cases")),
    )
    op.create_table(
        "ui_case_versions",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("content", sa.JSON(), nullable=False),
        sa.Column("saved_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", "version", name=op.f("pk_ui_case_versions")),
    )


def downgrade() -> None:
    op.drop_table("ui_case_versions")
    op.drop_table("ui_cases")
    with op.batch_alter_table("eval_runs") as table:
        table.drop_column("workspace_diff")
