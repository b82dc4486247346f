"""Each eval run's warnings (`eval_runs.warnings`): what did not change its outcome but deserves a look, such as an
online result's note that its trace never closed, a spent judge budget, or the drift alarm it tipped.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # ADD COLUMN, nullable: no copy; eval runs stored before it have no warnings
    op.add_column("eval_runs", sa.Column("warnings", sa.JSON()))


def downgrade() -> None:
    with op.batch_alter_table("eval_runs") as table:
        table.drop_column("warnings")
