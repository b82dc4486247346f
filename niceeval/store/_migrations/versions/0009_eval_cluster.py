"""Each planned eval's cluster (`define_eval(cluster=...)`, else its case): `suite_evals.cluster`.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # ADD COLUMN, nullable: no copy; suite runs stored before it have no cluster and `diff` pairs them by eval
    op.add_column("suite_evals", sa.Column("cluster", sa.Text()))


def downgrade() -> None:
    with op.batch_alter_table("suite_evals") as table:
        table.drop_column("cluster")
