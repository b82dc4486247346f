"""The diffs of closed suite run pairs kept for reuse (`kept_diffs`): the compare page and `niceeval diff` of two
100,000-eval runs compute one once and read it back after.

Revision ID: 0018_cmp
Revises: 0017_pgindex
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018_cmp"
down_revision = "0017_pgindex"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "kept_diffs",
        sa.Column("base", sa.String(32), nullable=False),
        sa.Column("head", sa.String(32), nullable=False),
        sa.Column("options", sa.String(64), nullable=False),
        sa.Column("base_closed", sa.String(40), nullable=False),
        sa.Column("head_closed", sa.String(40), nullable=False),
        sa.Column("niceeval_version", sa.String(32), nullable=False),
        sa.Column("diff", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["base"], ["suite_runs.id"], name="fk_kept_diffs_base_suite_runs", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["head"], ["suite_runs.id"], name="fk_kept_diffs_head_suite_runs", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("base", "head", "options", name="pk_kept_diffs"),
    )
    op.create_index("ix_kept_diffs_head", "kept_diffs", ["head"])


def downgrade() -> None:
    op.drop_index("ix_kept_diffs_head", table_name="kept_diffs")
    op.drop_table("kept_diffs")
