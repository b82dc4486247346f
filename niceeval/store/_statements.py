"""Writing suite runs at the driver level: the header and plan at start, eval runs in batches, totals at the end.

The one implementation of these writes, run on the recorder's connection (`_connection.WriteConnection`), and by
the shards' bookkeeping on a SQLAlchemy connection's driver connection. Rows are built as tuples in the column
order of `Columns`, values as SQLAlchemy's types store them (JSON columns as JSON text, pydantic's compact form of
what SQLAlchemy would `json.dumps`, a Python None there being JSON `null`; SQLite datetimes as `DateTime`'s text), so
every read path gives back the same objects; a test pins each column list to `_schema`'s tables. Child rows get
their parent's id from `Session.new_ids`.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import chain, islice
from operator import attrgetter
from typing import Any

import pydantic_core
from pydantic import BaseModel

from niceeval._core.assertion import JudgeCall
from niceeval._core.events import Event, MessageEvent, UsageEvent
from niceeval._core.redact import is_clean, scrub_run
from niceeval._core.results import RunResult
from niceeval._core.summary import PlannedEval
from niceeval.store._driver import Dialect, Session
from niceeval.store._meta import niceeval_version
from niceeval.store._suite_run import SuiteEnd, SuiteRunStart
from niceeval.store._verdicts import count_verdicts

_dumps = json.dumps
_NULL = "null"
"""A JSON column's text for a Python None (most of a run's JSON columns, written without the serializer)."""
_json = functools.partial(pydantic_core.to_json, inf_nan_mode="null")
"""Values of a run's JSON columns as JSON text (pydantic's serializer: what `json.dumps` of their `model_dump(mode=
"json")` gives, read back, without building that copy first). NaN and infinities are written null, as a model's
fields are: JSON has no such numbers (PostgreSQL's `json` refuses the text, and a reply's data is the model's)."""


def _model_json(model: BaseModel, **options: Any) -> bytes:
    return model.__pydantic_serializer__.to_json(model, **options)


@dataclass(frozen=True, slots=True)
class Columns:
    """The columns a statement writes into one table, in the order of its row tuples."""

    table: str
    names: tuple[str, ...]
    json: frozenset[str] = frozenset()
    when: frozenset[str] = frozenset()

    def insert(self, dialect: Dialect, rows: int = 1) -> str:
        """The INSERT statement for `rows` rows, in `dialect`'s placeholders."""
        marks = ", ".join(dialect.mark + (dialect.json_cast if name in self.json else "") for name in self.names)
        return f"INSERT INTO {self.table} ({', '.join(self.names)}) VALUES " + ", ".join([f"({marks})"] * rows)


SUITE_START = Columns(
    "suite_runs",
    ("id", "started_at", "status", "kind", "parent_id", "command", "root", "git_commit", "git_branch", "git_dirty",
     "config_digest", "niceeval_version", "strict", "min_pass_rate", "evals", "runs_planned", "shard_count",
     "plan_digest", "experiment"),
    json=frozenset({"command"}),
    when=frozenset({"started_at"}),
)  # fmt: skip
"""What a new suite run records (its totals and end keep their defaults until `finish_suite`)."""
SUITE_EVALS = Columns(
    "suite_evals",
    ("suite_run_id", "eval_id", "position", "file", "line", "tags", "runs", "cluster"),
    json=frozenset({"tags"}),
)
EVAL_RUNS = Columns(
    "eval_runs",
    ("id", "suite_run_id", "eval_id", "run_index", "file", "line", "outcome", "finished_at", "duration_s", "error",
     "skip_reason", "sandbox_path", "workspace_diff", "agent_calls", "agent_tokens", "agent_cost", "judge_calls",
     "judge_tokens", "judge_cost", "judge_cached", "unpriced", "input_tokens", "output_tokens", "cache_read_tokens",
     "case_id", "variant", "points", "points_possible", "failure_class", "attempts", "identity", "provenance",
     "carried_from", "carried_index", "sandbox", "warnings"),
    json=frozenset({"error", "unpriced", "variant", "sandbox", "warnings"}),
    when=frozenset({"finished_at"}),
)  # fmt: skip
_ASSERTION_FIELDS = ("name", "severity", "score", "threshold", "state", "reason", "expected", "actual", "location",
                     "optional", "cause", "key", "unstable", "points")  # fmt: skip
ASSERTIONS = Columns("assertions", ("id", "eval_run_id", "position", *_ASSERTION_FIELDS))
_JUDGE_FIELDS = ("model", "messages", "input", "score", "passed", "reason", "input_tokens", "output_tokens",
                 "cache_read_tokens", "cost", "latency", "cached", "fallback", "asked", "cause")  # fmt: skip
JUDGE_CALLS = Columns("judge_calls", ("id", "assertion_id", "position", *_JUDGE_FIELDS), json=frozenset({"messages"}))
EVENTS = Columns(
    "events",
    ("eval_run_id", "seq", "type", "at", "payload", "latency"),
    json=frozenset({"payload"}),
    when=frozenset({"at"}),
)
TURNS = Columns(
    "turns", ("eval_run_id", "position", "sent", "reply", "data", "first_seq", "last_seq"), json=frozenset({"data"})
)
SPANS = Columns("spans", ("eval_run_id", "position", "payload"), json=frozenset({"payload"}))
WRITTEN = (SUITE_START, SUITE_EVALS, EVAL_RUNS, ASSERTIONS, JUDGE_CALLS, EVENTS, TURNS, SPANS)

_assertion_values = attrgetter(*_ASSERTION_FIELDS)
_judge_fields = attrgetter(*_JUDGE_FIELDS)
_EVENT_HEAD = {"seq", "type", "at"}
_statements: dict[tuple[str, str, int], str] = {}
_MAX_PARAMS = 32_766 if sqlite3.sqlite_version_info >= (3, 32) else 999
"""Parameters per statement: SQLite's limit since 3.32 (999 before; PostgreSQL takes 65,535). With 999, a
36-column table got 16 rows per statement."""
_MAX_ROWS = 64
"""Rows per statement, at most: past that a statement's text and compiled program (cached by the driver) grow
for no fewer hand-overs worth having."""


def _insert(session: Session, columns: Columns, rows: int = 1) -> str:
    key = (session.dialect.kind, columns.table, rows)
    found = _statements.get(key)
    if found is None:
        found = _statements[key] = columns.insert(session.dialect, rows)
    return found


def _insert_rows(session: Session, columns: Columns, rows: Sequence[tuple[Any, ...]]) -> None:
    """`rows` into `columns.table`: PostgreSQL takes them in one `COPY`, SQLite in multi-row INSERTs.

    SQLite: as many rows per statement as `_MAX_PARAMS` allows. The driver lets go of the interpreter around every
    statement it runs: one statement per row made the writer thread and the event loop hand the interpreter back
    and forth about ten times per eval run. PostgreSQL: psycopg parses a statement of over 50 parameters anew on
    every run, in Python (a 64-row INSERT cost more than its rows); `COPY` sends the rows in psycopg's C formatting.
    """
    if not rows:
        return
    if session.dialect.kind == "postgresql":
        session.copy(copy_statement(columns), rows)
        return
    most = min(_MAX_ROWS, _MAX_PARAMS // len(columns.names))
    first = 0
    while first < len(rows):
        # chunks of a power of two rows: a handful of statement texts per table for the driver's statement cache
        count = 1 << (min(most, len(rows) - first).bit_length() - 1)
        chunk = rows[first : first + count]
        session.run(_insert(session, columns, count), list(chain.from_iterable(chunk)))
        first += count


def copy_statement(columns: Columns) -> str:
    """PostgreSQL: the `COPY ... FROM STDIN` that takes `columns`' rows."""
    return f"COPY {columns.table} ({', '.join(columns.names)}) FROM STDIN"


def insert_suite(
    session: Session,
    start: SuiteRunStart,
    plan: Sequence[PlannedEval],
    *,
    shard_count: int | None = None,
    plan_digest: str | None = None,
) -> None:
    """Record a new suite run (status `running`) and the evals it plans (`shard_count`: written by shards)."""
    row = (
        start.id, session.dialect.stamp(datetime.now(UTC)), "running", start.kind, start.parent_id,
        _dumps(start.command), start.root, start.git_commit, start.git_branch, start.git_dirty, start.config_digest,
        niceeval_version(), start.strict, start.min_pass_rate, len(plan), 0, shard_count, plan_digest,
        start.experiment,
    )  # fmt: skip
    session.execute(_insert(session, SUITE_START), row)
    runs = add_plan(session, start.id, plan)  # the plan's runs counted on its one pass, then recorded
    session.execute("UPDATE suite_runs SET runs_planned = ? WHERE id = ?", (runs, start.id))


PLAN_BATCH = 4096
"""Planned evals written per batch: the rows of a plan of 100,000 cases are never all built at once."""


def add_plan(session: Session, suite_run_id: str, plan: Sequence[PlannedEval]) -> int:
    """Plan more evals in a suite run, after those it plans (a resume that raised `--runs` updates theirs); the
    runs `plan` plans.

    The rows are built and written `PLAN_BATCH` at a time."""
    if not plan:
        return 0
    query = "SELECT eval_id, runs FROM suite_evals WHERE suite_run_id = ?"
    known: dict[str, int] = dict(session.execute(query, (suite_run_id,)).fetchall())
    position = len(known)
    grown: list[tuple[int, str, str]] = []
    runs = 0
    evals = iter(plan)  # one pass: the suite's plan reads its datasets again on each walk
    while batch := list(islice(evals, PLAN_BATCH)):
        rows = []
        for p in batch:
            runs += p.runs
            if p.id not in known:
                rows.append((suite_run_id, p.id, position, p.file, p.line, _json(p.tags).decode(), p.runs, p.cluster))
                position += 1
            elif p.runs > known[p.id]:
                grown.append((p.runs, suite_run_id, p.id))
        _insert_rows(session, SUITE_EVALS, rows)
    session.executemany(session.sql("UPDATE suite_evals SET runs = ? WHERE suite_run_id = ? AND eval_id = ?"), grown)
    return runs


def reopen(session: Session, suite_run_id: str) -> None:
    """Mark a suite run `running` again (a resume is about to complete it); the tally kept when it last closed no
    longer holds (the viewer folds its eval runs until it closes again)."""
    session.execute("UPDATE suite_runs SET status = 'running', finished_at = NULL WHERE id = ?", (suite_run_id,))
    session.execute("DELETE FROM suite_tallies WHERE suite_run_id = ?", (suite_run_id,))


@dataclass(frozen=True, slots=True)
class RunRows:
    """A finished eval run as the rows it is stored in, each without the ids its transaction gives it.

    The batch writers build them on the event loop, a batch at a time as the loop writes it (PostgreSQL outside a
    loop: as each run finishes). Built in a writer thread, the same Python work made the event loop wait for the
    interpreter at each of its own system calls, which cost the loop more than the building itself.
    """

    eval_id: str
    run_index: int
    run: tuple[Any, ...]
    """The `eval_runs` row after its `id` and `suite_run_id`."""
    assertions: list[tuple[Any, ...]]
    """Each assertion's row after its `id` and `eval_run_id`."""
    judge_calls: list[tuple[int, tuple[Any, ...]]]
    """(the position of its assertion, the call's row after its `id` and `assertion_id`)."""
    events: list[tuple[Any, ...]]
    """Each event's row after its `eval_run_id`; `turns` and `spans` likewise."""
    turns: list[tuple[Any, ...]]
    spans: list[tuple[Any, ...]]


def run_rows(result: RunResult, dialect: Dialect, finished: datetime | None = None) -> RunRows:
    """The rows that store `result` (scrubbed first unless a redactor found it clean), stamped as finished at
    `finished` (now by default)."""
    if result.provenance != "executed":  # a reference to the run that holds its record: only its summary row
        row = _eval_run(result, dialect.stamp(finished or datetime.now(UTC)))
        return RunRows(result.eval_id, result.run_index, row, [], [], [], [], [])
    if not is_clean(result):
        result = scrub_run(result, storable=True)
    stamp = dialect.stamp
    events = result.events
    return RunRows(
        result.eval_id,
        result.run_index,
        _eval_run(result, stamp(finished or datetime.now(UTC))),
        [(position, *_assertion_values(a)) for position, a in enumerate(result.assertions)],
        [
            (position, (i, *_judge_values(call)))
            for position, a in enumerate(result.assertions)
            for i, call in enumerate(a.judge_calls)
        ],
        [
            (e.seq, e.type, stamp(e.at), _model_json(e, exclude=_EVENT_HEAD, fallback=repr).decode(), _latency(e))
            for e in events
        ],  # agents may put anything in an event's data: `repr` of what JSON cannot hold
        turns_of(events),
        [(i, _model_json(s).decode()) for i, s in enumerate(result.spans)],
    )


def _latency(event: Event) -> float | None:
    """A reply's measured turn seconds, for the `events.latency` column (None for every other event)."""
    return event.latency if isinstance(event, MessageEvent) else None


def insert_runs(session: Session, suite_run_id: str, runs: Sequence[RunResult | RunRows]) -> None:
    """Record finished eval runs (one statement per table for the whole batch, or a few)."""
    built = [run if isinstance(run, RunRows) else run_rows(run, session.dialect) for run in runs]
    ids = session.new_ids(id_counts(built))
    for columns, rows in run_tables(suite_run_id, built, ids):
        _insert_rows(session, columns, rows)


def id_counts(built: Sequence[RunRows]) -> dict[str, int]:
    """The new ids a batch of runs takes, per table whose rows others point to."""
    return {
        "eval_runs": len(built),
        "assertions": sum(len(r.assertions) for r in built),
        "judge_calls": sum(len(r.judge_calls) for r in built),
    }


def run_tables(
    suite_run_id: str, built: Sequence[RunRows], ids: dict[str, Sequence[int]]
) -> list[tuple[Columns, list[tuple[Any, ...]]]]:
    """A batch's rows, table by table in the order they are written (parents first), given its new `ids`."""
    run_ids = ids["eval_runs"]
    assertion_ids = iter(ids["assertions"])
    run_rows_: list[tuple[Any, ...]] = []
    assertion_rows: list[tuple[Any, ...]] = []
    call_rows: list[tuple[Any, ...]] = []
    event_rows: list[tuple[Any, ...]] = []
    turn_rows: list[tuple[Any, ...]] = []
    span_rows: list[tuple[Any, ...]] = []
    for run_id, r in zip(run_ids, built, strict=True):
        run_rows_.append((run_id, suite_run_id, *r.run))
        owners = [next(assertion_ids) for _ in r.assertions]
        assertion_rows += [(a_id, run_id, *row) for a_id, row in zip(owners, r.assertions, strict=True)]
        call_rows += [(owners[position], *row) for position, row in r.judge_calls]
        event_rows += [(run_id, *row) for row in r.events]
        turn_rows += [(run_id, *row) for row in r.turns]
        span_rows += [(run_id, *row) for row in r.spans]
    calls = [(call_id, *row) for call_id, row in zip(ids["judge_calls"], call_rows, strict=True)]
    return [
        (EVAL_RUNS, run_rows_),
        (ASSERTIONS, assertion_rows),
        (JUDGE_CALLS, calls),
        (EVENTS, event_rows),
        (TURNS, turn_rows),
        (SPANS, span_rows),
    ]


def _eval_run(result: RunResult, finished: Any) -> tuple[Any, ...]:
    agent, judge = result.agent_spend, result.judge_spend
    unpriced = _NULL
    if agent.unpriced or judge.unpriced:
        unpriced = _json({"agent": agent.unpriced, "judge": judge.unpriced}).decode()
    input_tokens = output_tokens = cache_read_tokens = 0
    for event in result.events:
        if isinstance(event, UsageEvent):
            input_tokens += event.input_tokens
            output_tokens += event.output_tokens
            cache_read_tokens += event.cache_read_tokens
    return (
        result.eval_id, result.run_index, result.file, result.line, result.outcome, finished,
        result.duration_s, _model_json(result.error).decode() if result.error else _NULL, result.skip_reason,
        result.sandbox_path, result.workspace_diff, agent.calls, agent.tokens, agent.cost, judge.calls, judge.tokens,
        judge.cost, judge.cached, unpriced, input_tokens, output_tokens, cache_read_tokens,
        result.case_id, _json(result.variant).decode() if result.variant is not None else _NULL, result.points,
        result.points_possible, result.failure, result.attempts, result.identity, result.provenance,
        result.carried_from, result.carried_index, _model_json(result.sandbox).decode() if result.sandbox else _NULL,
        _json(result.warnings).decode() if result.warnings else _NULL,
    )  # fmt: skip


def _judge_values(call: JudgeCall) -> tuple[Any, ...]:
    values = _judge_fields(call)
    return (values[0], _json(values[1]).decode(), *values[2:])  # `messages` is JSON


def turns_of(events: Sequence[Event]) -> list[tuple[Any, ...]]:
    """The exchanges with the agent as `(position, sent, reply, data, first_seq, last_seq)`: each user message,
    the last assistant reply before the next one (`data` as JSON text)."""
    turns: list[list[Any]] = []
    for event in events:
        if not isinstance(event, MessageEvent) or event.role == "system":
            continue
        if event.role == "user":
            turns.append([len(turns), event.text, None, None, event.seq, event.seq])
        elif turns:
            turns[-1][2:4] = [event.text, event.data]
            turns[-1][5] = event.seq
    if turns:  # a turn spans every event up to the next user message (tool calls, usage after the reply)
        ends = [t[4] - 1 for t in turns[1:]] + [events[-1].seq]
        for turn, end in zip(turns, ends, strict=True):
            turn[5] = max(turn[5], end)
    return [(*turn[:3], _json(turn[3], fallback=repr).decode(), *turn[4:]) for turn in turns]


def finish_suite(session: Session, suite_run_id: str, end: SuiteEnd) -> None:
    """Close a suite run: how it ended and its totals counted from the eval runs stored in it (its evals' tallies
    follow in a transaction of their own: `keep_tallies`)."""
    counted = totals(session, suite_run_id)
    names = list(counted)
    assignments = ", ".join(f"{name} = ?" for name in names)
    errors_mark = "?" + session.dialect.json_cast
    session.execute(
        f"UPDATE suite_runs SET status = ?, finished_at = ?, exit_code = ?, duration_s = coalesce(duration_s, 0.0) "
        f"+ ?, errors = {errors_mark}, stopped = ?, {assignments} WHERE id = ?",  # a resume adds its own time
        (end.status, session.dialect.stamp(datetime.now(UTC)), end.exit_code, end.duration_s, _dumps(list(end.errors)),
         end.stopped, *(counted[name] for name in names), suite_run_id),
    )  # fmt: skip


def totals(session: Session, suite_run_id: str) -> dict[str, Any]:
    """Eval verdicts, runs, tokens and spend of a suite run, counted in SQL from its stored eval runs and plan (the
    process holds a row per distinct set of an eval's counts, none per eval: `count_verdicts`)."""
    rule = session.execute("SELECT strict, min_pass_rate FROM suite_runs WHERE id = ?", (suite_run_id,)).fetchone()
    evals, runs_planned = session.execute(
        "SELECT count(*), coalesce(sum(runs), 0) FROM suite_evals WHERE suite_run_id = ?", (suite_run_id,)
    ).fetchone()
    counts = dict.fromkeys(("passed", "scored", "failed", "skipped"), 0)
    if rule is not None:
        counts = count_verdicts(session, suite_run_id, strict=bool(rule[0]), min_pass_rate=rule[1])
    spend = session.execute(  # what this suite run paid: its carried and accepted slots were paid for before
        "SELECT count(*), sum(CASE WHEN provenance = 'executed' THEN 1 ELSE 0 END), "
        "coalesce(sum(CASE WHEN provenance = 'executed' THEN agent_tokens END), 0), "
        "coalesce(sum(CASE WHEN provenance = 'executed' THEN judge_tokens END), 0), "
        "sum(CASE WHEN provenance = 'executed' THEN agent_cost END), "
        "sum(CASE WHEN provenance = 'executed' THEN judge_cost END), "
        "count(CASE WHEN provenance = 'executed' THEN agent_cost END), "
        "count(CASE WHEN provenance = 'executed' THEN judge_cost END) FROM eval_runs WHERE suite_run_id = ?",
        (suite_run_id,),
    ).fetchone()
    done, runs, agent_tokens, judge_tokens, agent_cost, judge_cost, agent_priced, judge_priced = spend
    runs = runs or 0  # the sum of no rows is NULL
    return {
        **counts,
        "runs_done": int(done),
        "agent_tokens": int(agent_tokens),  # PostgreSQL sums a bigint as numeric
        "judge_tokens": int(judge_tokens),
        # a run whose model has no price has a NULL cost: the sum is then unknown, never a silent undercount
        "agent_cost": float(agent_cost or 0.0) if agent_priced == runs else None,
        "judge_cost": float(judge_cost or 0.0) if judge_priced == runs else None,
        "evals": int(evals),
        "runs_planned": int(runs_planned),
    }
