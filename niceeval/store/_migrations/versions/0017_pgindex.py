"""Indexes for the run page of a 100,000-eval suite run among a million stored eval runs: the `resisted attack`
verdicts by a partial index (the page looked for them in every assertion of the store), and the evals' tallies in
page order carrying their id (a deep page is skipped in the index alone).

Revision ID: 0017_pgindex
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017_pgindex"
down_revision = "0016"
branch_labels = None
depends_on = None

RESISTED = sa.text("name = 'resisted attack'")


def upgrade() -> None:
    op.create_index(
        "ix_assertions_resisted", "assertions", ["eval_run_id"], sqlite_where=RESISTED, postgresql_where=RESISTED
    )
    op.create_index(
        "ix_eval_tallies_suite_run_id_rank_position_eval_id",
        "eval_tallies",
        ["suite_run_id", "rank", "position", "eval_id"],
    )
    op.drop_index("ix_eval_tallies_suite_run_id_rank_position", table_name="eval_tallies")


def downgrade() -> None:
    op.create_index("ix_eval_tallies_suite_run_id_rank_position", "eval_tallies", ["suite_run_id", "rank", "position"])
    op.drop_index("ix_eval_tallies_suite_run_id_rank_position_eval_id", table_name="eval_tallies")
    op.drop_index("ix_assertions_resisted", table_name="assertions")
