"""The initial schema: suite runs, planned evals, eval runs, assertions, judge calls, events and turns.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _json() -> sa.types.TypeEngine[object]:
    return sa.JSON()


def _row_id() -> sa.Column[int]:
    return sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False)


def _fk(column: str, table: str, owner: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{table}.id"], name=op.f(f"fk_{owner}_{column}_{table}"), ondelete="CASCADE"
    )


def _suite_runs() -> None:
    op.create_table(
        "suite_runs",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("kind", sa.String(length=16), server_default="run", nullable=False),
        sa.Column("parent_id", sa.String(length=32), nullable=True),
        sa.Column("command", _json(), nullable=False),
        sa.Column("root", sa.Text(), server_default="", nullable=False),
        sa.Column("git_commit", sa.String(length=64), nullable=True),
        sa.Column("git_branch", sa.Text(), nullable=True),
        sa.Column("git_dirty", sa.Boolean(), nullable=True),
        sa.Column("config_digest", sa.String(length=64), nullable=True),
        sa.Column("niceeval_version", sa.String(length=32), nullable=False),
        sa.Column("strict", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("min_pass_rate", sa.Float(), server_default="1", nullable=False),
        *(
            sa.Column(name, sa.Integer(), server_default="0", nullable=False)
            for name in ("evals", "runs_planned", "runs_done", "passed", "scored", "failed", "skipped")
        ),
        sa.Column("errors", _json(), nullable=True),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("duration_s", sa.Float(), nullable=True),
        sa.Column("agent_cost", sa.Float(), nullable=True),
        sa.Column("judge_cost", sa.Float(), nullable=True),
        sa.Column("agent_tokens", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("judge_tokens", sa.BigInteger(), server_default="0", nullable=False),
        sa.ForeignKeyConstraint(
            ["parent_id"], ["suite_runs.id"], name=op.f("fk_suite_runs_parent_id_suite_runs"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_suite_runs")),
    )
    op.create_index(op.f("ix_suite_runs_started_at"), "suite_runs", ["started_at"])
    op.create_index(op.f("ix_suite_runs_status_started_at"), "suite_runs", ["status", "started_at"])
    op.create_table(
        "suite_evals",
        sa.Column("suite_run_id", sa.String(length=32), nullable=False),
        sa.Column("eval_id", sa.Text(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("file", sa.Text(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=False),
        sa.Column("tags", _json(), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
        _fk("suite_run_id", "suite_runs", "suite_evals"),
        sa.PrimaryKeyConstraint("suite_run_id", "eval_id", name=op.f("pk_suite_evals")),
    )


def _eval_runs() -> None:
    op.create_table(
        "eval_runs",
        _row_id(),
        sa.Column("suite_run_id", sa.String(length=32), nullable=False),
        sa.Column("eval_id", sa.Text(), nullable=False),
        sa.Column("run_index", sa.Integer(), nullable=False),
        sa.Column("file", sa.Text(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("duration_s", sa.Float(), nullable=False),
        sa.Column("error", _json(), nullable=True),
        sa.Column("skip_reason", sa.Text(), nullable=True),
        sa.Column("sandbox_path", sa.Text(), nullable=True),
        sa.Column("agent_calls", sa.Integer(), nullable=False),
        sa.Column("agent_tokens", sa.BigInteger(), nullable=False),
        sa.Column("agent_cost", sa.Float(), nullable=True),
        sa.Column("judge_calls", sa.Integer(), nullable=False),
        sa.Column("judge_tokens", sa.BigInteger(), nullable=False),
        sa.Column("judge_cost", sa.Float(), nullable=True),
        sa.Column("judge_cached", sa.Integer(), nullable=False),
        sa.Column("unpriced", _json(), nullable=True),
        sa.Column("input_tokens", sa.BigInteger(), nullable=False),
        sa.Column("output_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cache_read_tokens", sa.BigInteger(), nullable=False),
        _fk("suite_run_id", "suite_runs", "eval_runs"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_eval_runs")),
        sa.UniqueConstraint(
            "suite_run_id", "eval_id", "run_index", name=op.f("uq_eval_runs_suite_run_id_eval_id_run_index")
        ),
    )
    op.create_index(op.f("ix_eval_runs_eval_id_finished_at"), "eval_runs", ["eval_id", "finished_at"])


def _assertions() -> None:
    op.create_table(
        "assertions",
        _row_id(),
        sa.Column("eval_run_id", sa.BigInteger(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("severity", sa.String(length=8), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("threshold", sa.Float(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("expected", sa.Text(), nullable=True),
        sa.Column("actual", sa.Text(), nullable=True),
        sa.Column("location", sa.Text(), nullable=True),
        sa.Column("optional", sa.Boolean(), nullable=False),
        sa.Column("cause", sa.String(length=32), nullable=True),
        _fk("eval_run_id", "eval_runs", "assertions"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_assertions")),
    )
    op.create_index(op.f("ix_assertions_eval_run_id_position"), "assertions", ["eval_run_id", "position"])
    op.create_table(
        "judge_calls",
        _row_id(),
        sa.Column("assertion_id", sa.BigInteger(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        sa.Column("messages", _json(), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("passed", sa.Boolean(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("cache_read_tokens", sa.Integer(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("latency", sa.Float(), nullable=False),
        sa.Column("cached", sa.Boolean(), nullable=False),
        sa.Column("fallback", sa.Boolean(), nullable=False),
        sa.Column("asked", sa.Boolean(), nullable=False),
        sa.Column("cause", sa.String(length=32), nullable=True),
        _fk("assertion_id", "assertions", "judge_calls"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_judge_calls")),
    )
    op.create_index(op.f("ix_judge_calls_assertion_id_position"), "judge_calls", ["assertion_id", "position"])


def _record() -> None:
    op.create_table(
        "events",
        sa.Column("eval_run_id", sa.BigInteger(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("payload", _json(), nullable=False),
        _fk("eval_run_id", "eval_runs", "events"),
        sa.PrimaryKeyConstraint("eval_run_id", "seq", name=op.f("pk_events")),
    )
    op.create_table(
        "turns",
        sa.Column("eval_run_id", sa.BigInteger(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("sent", sa.Text(), nullable=False),
        sa.Column("reply", sa.Text(), nullable=True),
        sa.Column("data", _json(), nullable=True),
        sa.Column("first_seq", sa.Integer(), nullable=False),
        sa.Column("last_seq", sa.Integer(), nullable=False),
        _fk("eval_run_id", "eval_runs", "turns"),
        sa.PrimaryKeyConstraint("eval_run_id", "position", name=op.f("pk_turns")),
    )


def upgrade() -> None:
    op.create_table(
        "store_info",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_store_info")),
    )
    _suite_runs()
    _eval_runs()
    _assertions()
    _record()


def downgrade() -> None:
    for table in ("judge_calls", "assertions", "turns", "events", "eval_runs", "suite_evals", "suite_runs"):
        op.drop_table(table)
    op.drop_table("store_info")
