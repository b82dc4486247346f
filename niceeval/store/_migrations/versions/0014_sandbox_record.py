"""The sandbox of a sandbox eval's run (`eval_runs.sandbox`, JSON): its kind, container, the attempts that shared
it, its image's size and build time.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("eval_runs", sa.Column("sandbox", sa.JSON(), nullable=True))  # ADD COLUMN: no copy


def downgrade() -> None:
    with op.batch_alter_table("eval_runs") as table:
        table.drop_column("sandbox")
