"""What `diff` reads of each eval of a closed suite run, kept with its tallies: its runs by outcome, cluster and
agent cost (`eval_sums`) and its scores summed per assertion (`eval_scores`). A diff of two closed 100,000-eval
runs grouped each side's 100,000 eval runs and 200,000 scored assertions again at every computation. Filled here
for the suite runs already closed (those with a kept tally).

Revision ID: 0020_diff
Revises: 0019_diff
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from niceeval.store._driver import session_of
from niceeval.store._kept_sums import keep_sums

revision = "0020_diff"
down_revision = "0019_diff"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "eval_sums",
        sa.Column("suite_run_id", sa.String(32), nullable=False),
        sa.Column("eval_id", sa.Text(), nullable=False),
        sa.Column("planned", sa.Boolean(), nullable=False),
        sa.Column("cluster", sa.Text()),
        sa.Column("passed", sa.Integer(), nullable=False),
        sa.Column("scored", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("skipped", sa.Integer(), nullable=False),
        sa.Column("counted", sa.Integer(), nullable=False),
        sa.Column("agent_cost", sa.Float()),
        sa.PrimaryKeyConstraint("suite_run_id", "eval_id", name="pk_eval_sums"),
    )
    op.create_table(
        "eval_scores",
        sa.Column("suite_run_id", sa.String(32), nullable=False),
        sa.Column("eval_id", sa.Text(), nullable=False),
        sa.Column("key", sa.Text()),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("score_sum", sa.Float(), nullable=False),
        sa.Column("score_count", sa.Integer(), nullable=False),
        sa.Column("graded", sa.Integer(), nullable=False),
    )
    op.create_index("ix_eval_scores_suite_run_id", "eval_scores", ["suite_run_id"])
    conn = op.get_bind()
    tallied = conn.execute(sa.text("SELECT suite_run_id FROM suite_tallies ORDER BY suite_run_id")).scalars().all()
    session = session_of(conn)
    for suite_run_id in tallied:
        keep_sums(session, suite_run_id)


def downgrade() -> None:
    op.drop_index("ix_eval_scores_suite_run_id", table_name="eval_scores")
    op.drop_table("eval_scores")
    op.drop_table("eval_sums")
