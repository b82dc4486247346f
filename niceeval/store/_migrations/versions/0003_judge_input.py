"""The user's input each judge call was shown (`judge_calls.input`).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("judge_calls", sa.Column("input", sa.Text(), nullable=True))  # ADD COLUMN: no copy


def downgrade() -> None:
    with op.batch_alter_table("judge_calls") as table:
        table.drop_column("input")
