"""Score evals' points: each eval run's points earned and possible (`eval_runs.points`, `points_possible`), and
the points each assertion is worth (`assertions.points`), for reports rebuilt from the store and the comparison of
mean scores.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("eval_runs", sa.Column("points", sa.Float(), nullable=True))  # ADD COLUMN: no copy
    op.add_column("eval_runs", sa.Column("points_possible", sa.Float(), nullable=True))
    op.add_column("assertions", sa.Column("points", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("assertions") as table:
        table.drop_column("points")
    with op.batch_alter_table("eval_runs") as table:
        table.drop_column("points_possible")
        table.drop_column("points")
