"""Each eval's tally in a closed suite run (`eval_tallies`) and its own tally (`suite_tallies`), for the viewer's
pages over runs of 100,000 evals; filled here for the suite runs already closed.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from niceeval.store._driver import session_of
from niceeval.store._tallies import keep_tallies

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "eval_tallies",
        sa.Column("suite_run_id", sa.String(32), nullable=False),
        sa.Column("eval_id", sa.Text(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("file", sa.Text(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("passed", sa.Integer(), nullable=False),
        sa.Column("scored", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("skipped", sa.Integer(), nullable=False),
        sa.Column("passing", sa.Integer(), nullable=False),
        sa.Column("counted", sa.Integer(), nullable=False),
        sa.Column("pass_rate", sa.Float()),
        sa.Column("duration_s", sa.Float(), nullable=False),
        sa.Column("cost", sa.Float()),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.Column("varied", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["suite_run_id"], ["suite_runs.id"], name="fk_eval_tallies_suite_run_id_suite_runs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("suite_run_id", "eval_id", name="pk_eval_tallies"),
    )
    op.create_index("ix_eval_tallies_suite_run_id_rank_position", "eval_tallies", ["suite_run_id", "rank", "position"])
    op.create_table(
        "suite_tallies",
        sa.Column("suite_run_id", sa.String(32), nullable=False),
        sa.Column("pass_rate", sa.Float()),
        sa.Column("low", sa.Float()),
        sa.Column("high", sa.Float()),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("varied", sa.JSON(), nullable=False),
        sa.Column("judging", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["suite_run_id"], ["suite_runs.id"], name="fk_suite_tallies_suite_run_id_suite_runs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("suite_run_id", name="pk_suite_tallies"),
    )
    conn = op.get_bind()
    closed = conn.execute(sa.text("SELECT id FROM suite_runs WHERE status <> 'running'")).scalars().all()
    session = session_of(conn)
    for suite_run_id in closed:
        keep_tallies(session, suite_run_id)


def downgrade() -> None:
    op.drop_table("suite_tallies")
    op.drop_index("ix_eval_tallies_suite_run_id_rank_position", table_name="eval_tallies")
    op.drop_table("eval_tallies")
