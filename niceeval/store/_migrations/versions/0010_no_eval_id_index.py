"""Drop `eval_runs`' index on `(eval_id, finished_at)`: an eval's history is found through its suite runs.

Each suite run's commits inserted its eval runs' entries all over that index (runs finish in no order of their
eval ids), a write of most of its pages every quarter second; it cost the store's writer about a third of its
work on a store of 20,000 runs, and more as the store grows.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_eval_runs_eval_id_finished_at", table_name="eval_runs")


def downgrade() -> None:
    op.create_index("ix_eval_runs_eval_id_finished_at", "eval_runs", ["eval_id", "finished_at"])
