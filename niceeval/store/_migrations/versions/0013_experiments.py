"""Experiments: the experiment a suite run ran (`suite_runs.experiment`), each eval run's slot identity and where
it came from (`eval_runs.identity`, `provenance`, `carried_from`, `carried_index`), and `acceptances`.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # ADD COLUMN, nullable or with a default: no copy; suite runs stored before it ran no experiment
    op.add_column("suite_runs", sa.Column("experiment", sa.Text()))
    op.create_index("ix_suite_runs_experiment_started_at", "suite_runs", ["experiment", "started_at"])
    op.add_column("eval_runs", sa.Column("identity", sa.String(64)))
    op.add_column("eval_runs", sa.Column("provenance", sa.String(16), nullable=False, server_default="executed"))
    op.add_column("eval_runs", sa.Column("carried_from", sa.String(32)))
    op.add_column("eval_runs", sa.Column("carried_index", sa.Integer()))
    op.create_table(
        "acceptances",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("experiment", sa.Text(), nullable=False),
        sa.Column("eval_id", sa.Text(), nullable=False),
        sa.Column("identity", sa.String(64), nullable=False),
        sa.Column("suite_run_id", sa.String(32), nullable=False),
        sa.Column("run_index", sa.Integer(), nullable=False),
        sa.Column("accepted_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_acceptances"),
        sa.ForeignKeyConstraint(
            ["suite_run_id"], ["suite_runs.id"], name="fk_acceptances_suite_run_id_suite_runs", ondelete="CASCADE"
        ),
        sa.UniqueConstraint(
            "experiment",
            "identity",
            "suite_run_id",
            "run_index",
            name="uq_acceptances_experiment_identity_suite_run_id_run_index",
        ),  # fmt: skip
    )
    op.create_index("ix_acceptances_experiment_identity", "acceptances", ["experiment", "identity"])


def downgrade() -> None:
    # DROP COLUMN in place (SQLite 3.35+): a batch copy of `suite_runs` or `eval_runs` would drop the old table,
    # and with it, through ON DELETE CASCADE, every row that points to it
    op.drop_index("ix_acceptances_experiment_identity", table_name="acceptances")
    op.drop_table("acceptances")
    for column in ("carried_index", "carried_from", "provenance", "identity"):
        op.drop_column("eval_runs", column)
    op.drop_index("ix_suite_runs_experiment_started_at", table_name="suite_runs")
    op.drop_column("suite_runs", "experiment")
