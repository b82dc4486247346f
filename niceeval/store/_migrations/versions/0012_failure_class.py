"""Why a failed run failed, and how often it ran: `eval_runs.failure_class`, `eval_runs.attempts`; and why a suite
run stopped early: `suite_runs.stopped`.

`failure_class` is `agent`, `infra` or `eval` on a failed run (NULL otherwise, and on runs stored before it):
infra runs are left out of pass rates. `attempts` is more than 1 when an infra failure was retried.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # ADD COLUMN, nullable: no copy; runs stored before it count as they did (no class, one attempt)
    op.add_column("eval_runs", sa.Column("failure_class", sa.String(8)))
    op.add_column("eval_runs", sa.Column("attempts", sa.Integer()))
    op.add_column("suite_runs", sa.Column("stopped", sa.Text()))


def downgrade() -> None:
    # Not a batch copy: both tables are parents (ON DELETE CASCADE), and dropping one to copy it would empty its
    # children. SQLite has had DROP COLUMN since 3.35.
    op.execute("ALTER TABLE eval_runs DROP COLUMN attempts")
    op.execute("ALTER TABLE eval_runs DROP COLUMN failure_class")
    op.execute("ALTER TABLE suite_runs DROP COLUMN stopped")
