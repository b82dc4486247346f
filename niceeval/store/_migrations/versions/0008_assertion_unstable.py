"""A sampled judge's unsettled verdict (`samples=K`): `assertions.unstable`.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # ADD COLUMN with a constant default: no copy; rows written before it were never sampled
    op.add_column("assertions", sa.Column("unstable", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("assertions") as table:
        table.drop_column("unstable")
