"""The results store's tables (SQLAlchemy Core), one schema for SQLite and PostgreSQL.

A suite run (`suite_runs`) plans evals (`suite_evals`, one row per eval with its number of runs) and holds eval
runs (`eval_runs`, keyed by `(suite_run_id, eval_id, run_index)`); each eval run owns its assertions (and their
judge calls), its events and its turns with the agent. Migrations in `_migrations/` build exactly this schema;
a test compares the two.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    text,
)

from niceeval.store._meta import SCHEMA_REVISION as SCHEMA_REVISION

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

Json = JSON()
# SQLite only makes INTEGER PRIMARY KEY an alias of the rowid (auto-incremented); PostgreSQL wants BIGINT.
RowId = BigInteger().with_variant(Integer(), "sqlite")
When = DateTime(timezone=True)
RESISTED = text("name = 'resisted attack'")
"""The `resisted attack` verdicts (`niceeval.attacks`), indexed apart: the run page asks for them by name."""
TIMED = text("latency IS NOT NULL")
"""The events that carry a turn's latency (assistant replies niceeval timed), indexed apart."""

store_info = Table(
    "store_info",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)
"""`niceeval_version`: the niceeval that last migrated the store (named when a newer store is refused)."""

suite_runs = Table(
    "suite_runs",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("started_at", When, nullable=False),
    Column("finished_at", When),
    Column("status", String(16), nullable=False),
    Column("kind", String(16), nullable=False, server_default="run"),
    Column("parent_id", String(32), ForeignKey("suite_runs.id", ondelete="SET NULL")),
    Column("command", Json, nullable=False),
    Column("root", Text, nullable=False, server_default=""),
    Column("git_commit", String(64)),
    Column("git_branch", Text),
    Column("git_dirty", Boolean),
    Column("config_digest", String(64)),
    Column("niceeval_version", String(32), nullable=False),
    Column("strict", Boolean, nullable=False, server_default="0"),
    Column("min_pass_rate", Float, nullable=False, server_default="1"),
    Column("evals", Integer, nullable=False, server_default="0"),
    Column("runs_planned", Integer, nullable=False, server_default="0"),
    Column("runs_done", Integer, nullable=False, server_default="0"),
    Column("passed", Integer, nullable=False, server_default="0"),
    Column("scored", Integer, nullable=False, server_default="0"),
    Column("failed", Integer, nullable=False, server_default="0"),
    Column("skipped", Integer, nullable=False, server_default="0"),
    Column("errors", Json),
    Column("exit_code", Integer),
    Column("duration_s", Float),
    Column("agent_cost", Float),
    Column("judge_cost", Float),
    Column("agent_tokens", BigInteger, nullable=False, server_default="0"),
    Column("judge_tokens", BigInteger, nullable=False, server_default="0"),
    Column("shard_count", Integer),
    Column("shards_done", Integer, nullable=False, server_default="0"),
    Column("plan_digest", String(64)),
    Column("stopped", Text),
    Column("experiment", Text),
    Index(None, "started_at"),
    Index(None, "status", "started_at"),
    Index(None, "experiment", "started_at"),
)
"""Statuses: `running` (being written, or killed), `finished`, `interrupted` (Ctrl-C). Kinds: `run`, `rerun`,
`rescore` (`parent_id` names the suite run it came from), `calibrate`, `pytest` (a pytest session). A suite run
named with `--run-id` (or written by pytest-xdist workers) is written by one or more shards (`shard_count`, each
in `suite_shards`; `shards_done` of them finished); `plan_digest` is the digest of the plan every shard must
share. `experiment`: the id of the experiment (`experiments/<id>.py`) the suite run ran, None for a plain run."""

suite_shards = Table(
    "suite_shards",
    metadata,
    Column("suite_run_id", String(32), ForeignKey("suite_runs.id", ondelete="CASCADE"), primary_key=True),
    Column("shard", Integer, primary_key=True),
    Column("status", String(16), nullable=False),
    Column("started_at", When, nullable=False),
    Column("finished_at", When),
    Column("attempts", Integer, nullable=False),
    Column("exit_code", Integer),
    Column("duration_s", Float),
)
"""One shard (1 to `shard_count`) of a suite run that has reported: `running` (or killed), `finished`,
`interrupted`. `attempts` counts its starts (a CI retry of a crashed shard is the second)."""

suite_evals = Table(
    "suite_evals",
    metadata,
    Column("suite_run_id", String(32), ForeignKey("suite_runs.id", ondelete="CASCADE"), primary_key=True),
    Column("eval_id", Text, primary_key=True),
    Column("position", Integer, nullable=False),
    Column("file", Text, nullable=False),
    Column("line", Integer, nullable=False),
    Column("tags", Json, nullable=False),
    Column("runs", Integer, nullable=False),
    Column("cluster", Text),
)

eval_runs = Table(
    "eval_runs",
    metadata,
    Column("id", RowId, primary_key=True, autoincrement=True),
    Column("suite_run_id", String(32), ForeignKey("suite_runs.id", ondelete="CASCADE"), nullable=False),
    Column("eval_id", Text, nullable=False),
    Column("run_index", Integer, nullable=False),
    Column("file", Text, nullable=False),
    Column("line", Integer, nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("failure_class", String(8)),
    Column("attempts", Integer),
    Column("finished_at", When, nullable=False),
    Column("duration_s", Float, nullable=False),
    Column("error", Json),
    Column("skip_reason", Text),
    Column("sandbox_path", Text),
    Column("workspace_diff", Text),
    Column("agent_calls", Integer, nullable=False),
    Column("agent_tokens", BigInteger, nullable=False),
    Column("agent_cost", Float),
    Column("judge_calls", Integer, nullable=False),
    Column("judge_tokens", BigInteger, nullable=False),
    Column("judge_cost", Float),
    Column("judge_cached", Integer, nullable=False),
    Column("unpriced", Json),
    Column("input_tokens", BigInteger, nullable=False),
    Column("output_tokens", BigInteger, nullable=False),
    Column("cache_read_tokens", BigInteger, nullable=False),
    Column("case_id", Text),
    Column("variant", Json),
    Column("points", Float),
    Column("points_possible", Float),
    Column("identity", String(64)),
    Column("provenance", String(16), nullable=False, server_default="executed"),
    Column("carried_from", String(32)),
    Column("carried_index", Integer),
    Column("sandbox", Json),
    Column("warnings", Json),
    UniqueConstraint("suite_run_id", "eval_id", "run_index"),
)
"""No index leads with `eval_id`: its entries would land all over it at every commit of a suite run (a write
each for most of its pages). An eval's history is found through its suite runs (`_read.suite_runs_with`).

An experiment's slot: `identity` is the digest the slot's result stands for (the eval's source and case, the
experiment's configuration, niceeval's major version; None outside experiments). `provenance` says where its result
comes from: `executed` here, or `carried` / `accepted` from eval run `carried_index` of suite run `carried_from`.
A carried or accepted slot's row holds the summary of the run it points to (outcome, duration, spend) and no
assertions, events or turns: its full record is read from the run it points to, never copied."""

acceptances = Table(
    "acceptances",
    metadata,
    Column("id", RowId, primary_key=True, autoincrement=True),
    Column("experiment", Text, nullable=False),
    Column("eval_id", Text, nullable=False),
    Column("identity", String(64), nullable=False),
    Column("suite_run_id", String(32), ForeignKey("suite_runs.id", ondelete="CASCADE"), nullable=False),
    Column("run_index", Integer, nullable=False),
    Column("accepted_at", When, nullable=False),
    UniqueConstraint("experiment", "identity", "suite_run_id", "run_index"),
    Index(None, "experiment", "identity"),
)
"""`niceeval accept`: eval run `run_index` of suite run `suite_run_id` adopted by `experiment` for the slot
identity `identity` (its own run was recorded under an older one). The next run of the experiment carries it as
`accepted`; the run it names is never changed."""

assertions = Table(
    "assertions",
    metadata,
    Column("id", RowId, primary_key=True, autoincrement=True),
    Column("eval_run_id", BigInteger, ForeignKey("eval_runs.id", ondelete="CASCADE"), nullable=False),
    Column("position", Integer, nullable=False),
    Column("name", Text, nullable=False),
    Column("severity", String(8), nullable=False),
    Column("score", Float),
    Column("threshold", Float, nullable=False),
    Column("state", String(16), nullable=False),
    Column("reason", Text, nullable=False),
    Column("expected", Text),
    Column("actual", Text),
    Column("location", Text),
    Column("optional", Boolean, nullable=False),
    Column("cause", String(32)),
    Column("key", Text),
    Column("unstable", Boolean, nullable=False, server_default=false()),
    Column("points", Float),
    Index(None, "eval_run_id", "position"),
    Index("ix_assertions_resisted", "eval_run_id", sqlite_where=RESISTED, postgresql_where=RESISTED),
)

judge_calls = Table(
    "judge_calls",
    metadata,
    Column("id", RowId, primary_key=True, autoincrement=True),
    Column("assertion_id", BigInteger, ForeignKey("assertions.id", ondelete="CASCADE"), nullable=False),
    Column("position", Integer, nullable=False),
    Column("model", Text, nullable=False),
    Column("messages", Json, nullable=False),
    Column("input", Text),
    Column("score", Float),
    Column("passed", Boolean),
    Column("reason", Text, nullable=False),
    Column("input_tokens", Integer, nullable=False),
    Column("output_tokens", Integer, nullable=False),
    Column("cache_read_tokens", Integer, nullable=False),
    Column("cost", Float),
    Column("latency", Float, nullable=False),
    Column("cached", Boolean, nullable=False),
    Column("fallback", Boolean, nullable=False),
    Column("asked", Boolean, nullable=False),
    Column("cause", String(32)),
    Index(None, "assertion_id", "position"),
)

events = Table(
    "events",
    metadata,
    Column("eval_run_id", BigInteger, ForeignKey("eval_runs.id", ondelete="CASCADE"), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("type", String(32), nullable=False),
    Column("at", When, nullable=False),
    Column("payload", Json, nullable=False),
    Column("latency", Float),
    Index("ix_events_latency", "eval_run_id", "latency", sqlite_where=TIMED, postgresql_where=TIMED),
)
"""`payload`: the event's own fields (everything but `seq`, `type` and `at`). `latency`: a reply's measured turn
seconds (`MessageEvent.latency`, also in its payload), in a column of its own so that `diff` reads every turn's
latency of a suite run from a partial index instead of parsing each message event's JSON."""

turns = Table(
    "turns",
    metadata,
    Column("eval_run_id", BigInteger, ForeignKey("eval_runs.id", ondelete="CASCADE"), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("sent", Text, nullable=False),
    Column("reply", Text),
    Column("data", Json),
    Column("first_seq", Integer, nullable=False),
    Column("last_seq", Integer, nullable=False),
)
"""One exchange with the agent: the user message sent, the assistant's reply (None: no reply came), and the
span of events it covers (`rescore` replays them)."""

spans = Table(
    "spans",
    metadata,
    Column("eval_run_id", BigInteger, ForeignKey("eval_runs.id", ondelete="CASCADE"), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("payload", Json, nullable=False),
)
"""The run's OpenTelemetry spans in start order; `payload` is a `SpanRecord` (ids, times, attributes, status)."""

ui_cases = Table(
    "ui_cases",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("version", Integer, nullable=False),
    Column("content", Json, nullable=False),
    Column("created_at", When, nullable=False),
    Column("updated_at", When, nullable=False),
    Column("deleted", Boolean, nullable=False, server_default="0"),
)
"""The latest version of each case (a deleted one stays, flagged, so its name keeps its history)."""

ui_case_versions = Table(
    "ui_case_versions",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("action", String(16), nullable=False),
    Column("content", Json, nullable=False),
    Column("saved_at", When, nullable=False),
)
"""Every version of every case, as saved (`created`, `edited`, `deleted`)."""

eval_tallies = Table(
    "eval_tallies",
    metadata,
    Column("suite_run_id", String(32), ForeignKey("suite_runs.id", ondelete="CASCADE"), primary_key=True),
    Column("eval_id", Text, primary_key=True),
    Column("position", Integer, nullable=False),
    Column("file", Text, nullable=False),
    Column("line", Integer, nullable=False),
    Column("tags", Json, nullable=False),
    Column("runs", Integer, nullable=False),
    Column("passed", Integer, nullable=False),
    Column("scored", Integer, nullable=False),
    Column("failed", Integer, nullable=False),
    Column("skipped", Integer, nullable=False),
    Column("passing", Integer, nullable=False),
    Column("counted", Integer, nullable=False),
    Column("pass_rate", Float),
    Column("duration_s", Float, nullable=False),
    Column("cost", Float),
    Column("verdict", String(16), nullable=False),
    Column("rank", Integer, nullable=False),
    Column("varied", Boolean, nullable=False),
    Index(None, "suite_run_id", "rank", "position", "eval_id"),
)
"""Each eval with a stored run in a closed suite run, folded over its runs by the suite run's rule (`_tallies`):
the run page and compare read a page of these instead of every eval run. Written when the suite run closes."""

suite_tallies = Table(
    "suite_tallies",
    metadata,
    Column("suite_run_id", String(32), ForeignKey("suite_runs.id", ondelete="CASCADE"), primary_key=True),
    Column("pass_rate", Float),
    Column("low", Float),
    Column("high", Float),
    Column("tags", Json, nullable=False),
    Column("varied", Json, nullable=False),
    Column("judging", Json, nullable=False),
)
"""A closed suite run's own tally, written with its `eval_tallies`: its pass rate (the mean of its evals' rates, with
the 95% interval clustered by case, `render.suite_rate`), every tag of its evals (sorted), the evals that ran
with variants (in plan order), and its judge calls by model, inconclusive causes and most missed assertions
(`_tallies.judging`)."""

eval_sums = Table(
    "eval_sums",
    metadata,
    Column("suite_run_id", String(32), primary_key=True),
    Column("eval_id", Text, primary_key=True),
    Column("planned", Boolean, nullable=False),
    Column("cluster", Text),
    Column("passed", Integer, nullable=False),
    Column("scored", Integer, nullable=False),
    Column("failed", Integer, nullable=False),
    Column("skipped", Integer, nullable=False),
    Column("counted", Integer, nullable=False),
    Column("agent_cost", Float),
)
"""Each eval with a stored run in a closed suite run: its runs by outcome (`counted`: neither skipped nor failed for
`infra`), whether the run planned it and its cluster, and the agent's cost summed over its runs not skipped (None
when one had no price): what `diff` reads per eval (`_kept_sums`). Written with the run's tallies. No foreign key:
PostgreSQL checks one row by row (0.4 s of a 100,000-eval close); `niceeval gc` deletes the rows with their run."""

eval_scores = Table(
    "eval_scores",
    metadata,
    Column("suite_run_id", String(32), nullable=False),
    Column("eval_id", Text, nullable=False),
    Column("key", Text),
    Column("name", Text, nullable=False),
    Column("score_sum", Float, nullable=False),
    Column("score_count", Integer, nullable=False),
    Column("graded", Integer, nullable=False),
    Index(None, "suite_run_id"),
)
"""A closed suite run's scores, summed per eval and assertion (`key`, `name`) over the eval's runs, and whether the
assertion is graded there (1: soft, or scoring between 0 and 1 at least once): `diff` reads these instead of the
assertions (`_kept_sums`). Written with the run's tallies; a run has them exactly when it has a `suite_tallies`
row. No primary key (`key` may be null), no foreign key (PostgreSQL checks one row by row: 0.9 s of a
100,000-eval close); `niceeval gc` deletes the rows with their run."""

kept_diffs = Table(
    "kept_diffs",
    metadata,
    Column("base", String(32), ForeignKey("suite_runs.id", ondelete="CASCADE"), primary_key=True),
    Column("head", String(32), ForeignKey("suite_runs.id", ondelete="CASCADE"), primary_key=True),
    Column("options", String(64), primary_key=True),
    Column("base_closed", String(40), nullable=False),
    Column("head_closed", String(40), nullable=False),
    Column("niceeval_version", String(32), nullable=False),
    Column("diff", Text, nullable=False),
    Index(None, "head"),
)
"""`Store.diff`'s result for two closed suite runs and one set of options (`options`: their digest), as JSON
(`_kept_diffs`): read again while both runs keep the close stamps it was computed at (`finished_at`, ISO 8601) and
niceeval is the one that computed it. Reopening a run clears its stamp; deleting one deletes its rows; `niceeval gc`
empties the table (a carried run's records may be among those it deleted)."""
