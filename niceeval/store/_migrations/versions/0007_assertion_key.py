"""An assertion's stable key (`.key("id")`): `assertions.key`, what `niceeval diff` matches assertions by.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("assertions", sa.Column("key", sa.Text(), nullable=True))  # ADD COLUMN: no copy


def downgrade() -> None:
    with op.batch_alter_table("assertions") as table:
        table.drop_column("key")
