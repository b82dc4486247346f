"""An assertion's stable key (`.key("id")`): `assertions.key`, what `niceeval diff` matches assertions by.

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
    op.add_column("assertions", sa.Column("key", sa.Text(), nullable=True))  # ADD COLUMN: no copy


def downgrade() -> None:
    with op.batch_alter_table("assertions") as table:
        table.drop_column("key")
