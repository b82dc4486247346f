"""Each eval run's dataset case and variant (`eval_runs.case_id`, `eval_runs.variant`), for the viewer's variants
table and for reports rebuilt from the store.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("eval_runs", sa.Column("case_id", sa.Text(), nullable=True))  # ADD COLUMN: no copy
    op.add_column("eval_runs", sa.Column("variant", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("eval_runs") as table:
        table.drop_column("variant")
        table.drop_column("case_id")
