"""A suite run's eval runs read for its reports: each run's JSON record made from its rows, and a light `RunResult`.

`niceeval report` and `export` of a run of 100,000 evals read every eval run. Building the full `RunResult` of
each (a pydantic model per assertion, judge call and event) and dumping it again was most of their time. Here the
rows are read in batches of consecutive eval run ids through the database driver (no SQLAlchemy row processing),
and each run's record in the JSON report is assembled from them: the JSON columns (events' payloads, errors,
variants, sandboxes, spans) are spliced as they are stored (pydantic's compact JSON, what the report writes), the
rest is encoded by pydantic's serializer, so the record is the bytes `run_json` writes for the `RunResult` that
`_read.results` builds from the same rows (a test compares the two). Beside it, the `RunResult` the reporters'
tallies and the console, JUnit and GitHub reporters read: its row's fields, its assertions without their judge
calls, of its events only the replies that timed a turn (what `latencies` reads), no spans.

A carried or accepted slot (an experiment's) holds no record of its own: it is read in full by `_read.results`
(its `json` is None: the report writes its `RunResult`). Without a JSON report to write (`records=False`: the
console, JUnit and GitHub reports), no record is made: judge calls and spans are not read, and of the events only
the timed replies (by the `events.latency` column's partial index).
"""

from __future__ import annotations

import functools
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import pydantic_core

from niceeval._core.events import MessageEvent
from niceeval._core.results import RunResult
from niceeval._core.summary import PlannedEval
from niceeval.store._driver import Session, session_of
from niceeval.store._read import planned_tags, results

if TYPE_CHECKING:
    from sqlalchemy import Connection

BATCH = 1000
"""Eval runs read per round trip (their assertions, judge calls, events and spans in one query each)."""


class _RunRow(NamedTuple):
    """An `eval_runs` row as the batch query reads it (its JSON columns as their text)."""

    id: int
    eval_id: str
    run_index: int
    file: str
    line: int
    outcome: str
    duration_s: float
    error: str | None
    skip_reason: str | None
    sandbox_path: str | None
    workspace_diff: str | None
    agent_calls: int
    agent_tokens: int
    agent_cost: float | None
    judge_calls: int
    judge_tokens: int
    judge_cost: float | None
    judge_cached: int
    unpriced: str | None
    case_id: str | None
    variant: str | None
    points: float | None
    points_possible: float | None
    failure_class: str | None
    attempts: int | None
    identity: str | None
    provenance: str
    carried_from: str | None
    carried_index: int | None
    sandbox: str | None
    warnings: str | None
    planned_file: str | None
    """The eval's row in the plan (`suite_evals`), joined: None when the suite run did not plan it."""
    planned_line: int | None
    planned_tags: str | None
    planned_runs: int | None
    planned_cluster: str | None
    planned_position: int | None


_PLANNED_COLUMNS = {
    "planned_file": "s.file",
    "planned_line": "s.line",
    "planned_tags": "s.tags",
    "planned_runs": "s.runs",
    "planned_cluster": "s.cluster",
    "planned_position": "s.position",
}


_JSON_COLUMNS = frozenset({"error", "unpriced", "variant", "sandbox", "warnings", "planned_tags"})
_JUDGE_NAMES = ("model", "messages", "input", "score", "passed", "reason", "input_tokens", "output_tokens",
                "cache_read_tokens", "cost", "latency", "cached", "fallback", "asked", "cause")  # fmt: skip

_to_json = functools.partial(pydantic_core.to_json, inf_nan_mode="null")
"""A value as pydantic's compact JSON, NaN and infinities as `null` (as `RunResult`'s serializer writes them:
PostgreSQL keeps a NaN score, which the plain encoder would write as `NaN`, not JSON)."""
_from_json = pydantic_core.from_json
_NULL = b"null"
_MESSAGES = b',"messages":0,'
_NO_CALLS = b',"judge_calls":[],'
_SPACED = b'": '
"""A key's colon in JSON text written with spaces after separators (pydantic's compact JSON has it only inside a
string value, whose text is then encoded again: the same bytes, at the cost of a parse)."""


@dataclass(frozen=True, slots=True)
class StoredRun:
    """One stored eval run as the reports read it."""

    result: RunResult
    """The run for tallies and the console, JUnit and GitHub reporters: everything but its assertions' judge calls,
    its spans and its events other than the replies that timed a turn (for a carried slot: the run in full)."""
    json: bytes | None
    """Its record in the JSON report (`report.json_report.run_json`'s bytes); None for a carried slot, or when no
    record was asked for."""
    planned: PlannedEval | None
    """Its eval as the suite run planned it (read with the run: a report holds no record per planned eval); None
    when the plan does not name it."""
    position: int | None
    """That eval's place in the plan (0 for the first); None when the plan does not name it."""


@dataclass(frozen=True, slots=True)
class _Sql:
    """The batch queries in one dialect: JSON columns read as their text, times as the report writes them."""

    ids: str
    runs: str
    assertions: str
    judge_calls: str
    events: str
    """Each eval run's events' records joined by commas, in `seq` order, one row a run (see `_queries`)."""
    timed: str
    """The timed replies' events (their `latency` set), for the light `RunResult`s."""
    spans: str


def _queries(session: Session) -> _Sql:
    postgresql = session.dialect.kind == "postgresql"

    def text(column: str) -> str:
        return f"{column}::text" if postgresql else column  # psycopg hands a `json` column back decoded

    if postgresql:
        utc = "at AT TIME ZONE 'UTC'"
        when = (
            f"""to_char({utc}, 'YYYY-MM-DD"T"HH24:MI:SS') || """
            f"CASE WHEN mod(extract(microseconds FROM {utc})::bigint, 1000000) = 0 THEN '' "
            f"ELSE to_char({utc}, '.US') END"
        )
    else:  # SQLite keeps `YYYY-MM-DD HH:MM:SS.ffffff`, in UTC
        when = "replace(CASE WHEN substr(at, 20) = '.000000' THEN substr(at, 1, 19) ELSE at END, ' ', 'T')"
    payload = text("payload")
    # An event's record, made by the database: `seq`, `at` (as pydantic writes it: ISO 8601, `Z`, no fraction when
    # it is zero), `type`, then the fields of its stored payload.
    event = (
        f"""'{{"seq":' || seq || ',"at":"' || {when} || 'Z","type":"' || type || '"' || """
        f"""CASE WHEN {payload} = '{{}}' THEN '}}' ELSE ',' || substr({payload}, 2) END"""
    )
    # A run's events' records joined in the database: one row a run, not one an event. SQLite before 3.44 takes no
    # ORDER BY inside `group_concat`; it joins the rows in the order it reads them, and grouped by `eval_run_id` it
    # reads them along the primary key (eval_run_id, seq), with no sort (a test pins that plan).
    joined = f"string_agg({event}, ',' ORDER BY seq)" if postgresql else f"group_concat({event}, ',')"

    def column(name: str) -> str:
        source = _PLANNED_COLUMNS.get(name, f"e.{name}")
        return text(source) if name in _JSON_COLUMNS else source

    columns = ", ".join(column(name) for name in _RunRow._fields)
    return _Sql(
        ids="SELECT id FROM eval_runs WHERE suite_run_id = ? ORDER BY id",
        runs=(  # by the key: see `stored_runs`
            f"SELECT {columns} FROM eval_runs e LEFT JOIN suite_evals s "
            "ON s.suite_run_id = e.suite_run_id AND s.eval_id = e.eval_id WHERE e.id BETWEEN ? AND ? ORDER BY e.id"
        ),
        assertions=(
            "SELECT eval_run_id, id, name, severity, score, threshold, state, reason, expected, actual, location, "
            "optional, cause, key, unstable, points FROM assertions WHERE eval_run_id BETWEEN ? AND ? "
            "ORDER BY eval_run_id, position"
        ),
        judge_calls=(
            f"SELECT assertion_id, model, {text('messages')}, input, score, passed, reason, input_tokens, "
            "output_tokens, cache_read_tokens, cost, latency, cached, fallback, asked, cause FROM judge_calls "
            "WHERE assertion_id BETWEEN ? AND ? ORDER BY assertion_id, position"
        ),
        events=f"SELECT eval_run_id, {joined} FROM events WHERE eval_run_id BETWEEN ? AND ? GROUP BY eval_run_id",
        timed=(
            f"SELECT eval_run_id, {event} FROM events "
            "WHERE eval_run_id BETWEEN ? AND ? AND latency IS NOT NULL ORDER BY eval_run_id, seq"
        ),
        spans=(
            f"SELECT eval_run_id, {text('payload')} FROM spans WHERE eval_run_id BETWEEN ? AND ? "
            "ORDER BY eval_run_id, position"
        ),
    )


def stored_runs(
    conn: Connection, suite_run_id: str, *, records: bool = True, batch: int = BATCH
) -> Iterator[StoredRun]:
    """Every eval run of a suite run in the order it was stored (as `_read.results` streams them).

    `records`: make each run's JSON report record (False: every `json` is None, and less is read).
    """
    session = session_of(conn)
    sql = _queries(session)
    ids = array("q", (row[0] for row in session.execute(sql.ids, (suite_run_id,))))  # 8 bytes an id, not 36
    for start in range(0, len(ids), batch):
        chunk = ids[start : start + batch]
        # Read by the key's range, the rows of another suite run in it (written at the same time) skipped: asked by
        # suite run too, SQLite reads the suite run's whole index for each batch.
        mine = set(chunk)
        rows = [_RunRow._make(row) for row in session.execute(sql.runs, (chunk[0], chunk[-1])) if row[0] in mine]
        carried = sorted({row.eval_id for row in rows if row.provenance != "executed"})
        full = {(r.eval_id, r.run_index): r for r in results(conn, suite_run_id, eval_ids=carried)} if carried else {}
        children = _Batch(session, sql, chunk[0], chunk[-1], records=records)
        for row in rows:
            if row.provenance != "executed":
                yield StoredRun(
                    result=full[row.eval_id, row.run_index],
                    json=None,
                    planned=_planned(row),
                    position=row.planned_position,
                )
            else:
                yield children.run(row)


class _Batch:
    """The child rows of a batch of eval runs (ids `low` to `high`), grouped by their eval run.

    `records`: read what the runs' JSON records hold (else only what their light `RunResult`s do)."""

    def __init__(self, session: Session, sql: _Sql, low: int, high: int, *, records: bool) -> None:
        self.records = records
        self.assertions = _grouped(session.execute(sql.assertions, (low, high)), _assertion)
        """Each eval run's assertions' fields (`_assertion`), by the eval run's id."""
        self.calls: dict[int, list[bytes]] = {}
        """Each assertion's judge calls' records, by the assertion's id."""
        owners = [a["id"] for fields in self.assertions.values() for a in fields]
        if owners and records:
            self.calls = _grouped(session.execute(sql.judge_calls, (min(owners), max(owners))), _judge_call)
        self.timed = _grouped(session.execute(sql.timed, (low, high)), _timed)
        self.events: dict[int, str] = dict(session.execute(sql.events, (low, high))) if records else {}
        self.spans: dict[int, str] = {}
        if records:
            rows = session.execute(sql.spans, (low, high))
            self.spans = {owner: ",".join(r[1] for r in group) for owner, group in groupby(rows, _OWNER)}

    def run(self, row: _RunRow) -> StoredRun:
        """The stored run of an eval run of this batch."""
        assertions = self.assertions.get(row.id, [])
        timed = self.timed.get(row.id, [])
        agent, judge = _spends(row)
        summary = RunResult.model_validate(
            {
                "eval_id": row.eval_id, "file": row.file, "line": row.line, "run_index": row.run_index,
                "outcome": row.outcome, "duration_s": row.duration_s, "error": _value(row.error),
                "skip_reason": row.skip_reason, "assertions": assertions, "events": timed,
                "sandbox_path": row.sandbox_path, "workspace_diff": row.workspace_diff, "agent_spend": agent,
                "judge_spend": judge, "case_id": row.case_id, "variant": _value(row.variant), "points": row.points,
                "points_possible": row.points_possible, "failure": row.failure_class, "attempts": row.attempts or 1,
                "identity": row.identity, "provenance": row.provenance, "carried_from": row.carried_from,
                "carried_index": row.carried_index, "warnings": _value(row.warnings) or [],
                "sandbox": _value(row.sandbox),
            }
        )  # fmt: skip
        if not self.records:
            return StoredRun(result=summary, json=None, planned=_planned(row), position=row.planned_position)
        listed = _assertions_json(assertions, self.calls)
        events = self.events.get(row.id, "")
        spans = self.spans.get(row.id, "")
        record = _run_json(row, listed, events, spans, agent, judge)
        return StoredRun(result=summary, json=record, planned=_planned(row), position=row.planned_position)


def _planned(row: _RunRow) -> PlannedEval | None:
    """The run's eval as its suite run planned it (as `_read.planned` reads it), if it did."""
    if row.planned_file is None or row.planned_line is None or row.planned_tags is None:
        return None
    tags = planned_tags(row.planned_tags)
    return PlannedEval(
        id=row.eval_id, file=row.planned_file, line=row.planned_line, tags=tags, runs=row.planned_runs or 1,
        cluster=row.planned_cluster,
    )  # fmt: skip


def _value(text: str | None) -> Any:
    """A JSON column's value (SQL NULL and JSON `null` alike: None)."""
    return None if text is None or text == "null" else _from_json(text)


def _raw(text: str | None) -> bytes:
    """A JSON column's stored text, to splice into the record (SQL NULL as JSON `null`)."""
    return _NULL if text is None else text.encode()


_OWNER = itemgetter(0)
_Row = TypeVar("_Row")


def _grouped(rows: Iterable[Sequence[Any]], make: Callable[[Sequence[Any]], _Row]) -> dict[int, list[_Row]]:
    """Rows ordered by their owner's id (their first column), each made into its record, grouped by that id."""
    return {owner: [make(row) for row in group] for owner, group in groupby(rows, _OWNER)}


def _timed(row: Sequence[Any]) -> MessageEvent:
    return MessageEvent.model_validate_json(row[1])


def _assertion(row: Sequence[Any]) -> dict[str, Any]:
    """An assertion's fields in `AssertionResult`'s order (its id first, for its judge calls; they go in later)."""
    return {
        "id": row[1], "name": row[2], "severity": row[3], "score": row[4], "threshold": row[5], "state": row[6],
        "reason": row[7], "expected": row[8], "actual": row[9], "location": row[10], "optional": bool(row[11]),
        "cause": row[12], "judge_calls": [], "key": row[13], "unstable": bool(row[14]), "points": row[15],
    }  # fmt: skip


def _judge_call(row: Sequence[Any]) -> bytes:
    """A judge call's record, its fields in `JudgeCall`'s order (SQLite's booleans are integers), its messages
    spliced as stored (decoded and encoded again only when not stored as pydantic's compact JSON)."""
    call = dict(zip(_JUDGE_NAMES, row[1:], strict=True))
    messages: str = call["messages"]
    call["messages"] = 0  # a stand-in, replaced by the stored text below
    call["passed"] = None if call["passed"] is None else bool(call["passed"])
    for flag in ("cached", "fallback", "asked"):
        call[flag] = bool(call[flag])
    head, _, tail = _to_json(call).partition(_MESSAGES)
    stored = messages.encode()
    if _SPACED in stored:  # maybe written by another encoder (spaces after separators): as pydantic writes it
        stored = _to_json(_from_json(stored))
    return b"".join((head, b',"messages":', stored, b",", tail))


def _assertions_json(assertions: list[dict[str, Any]], calls: dict[int, list[bytes]]) -> bytes:
    """A run's assertions' records, each with its judge calls' records (`_judge_call`) spliced in."""
    owners = [assertion.pop("id") for assertion in assertions]
    listed = _to_json(assertions)
    if not any(owner in calls for owner in owners):
        return listed
    # Each record holds `,"judge_calls":[],` once, in order: a string value cannot hold it unescaped.
    pieces = listed.split(_NO_CALLS)
    parts = [pieces[0]]
    for owner, piece in zip(owners, pieces[1:], strict=True):
        parts += (b',"judge_calls":[', b",".join(calls.get(owner, ())), b"],", piece)
    return b"".join(parts)


def _spends(row: _RunRow) -> tuple[dict[str, Any], dict[str, Any]]:
    """The agent's and the judges' spend as `_rows.from_rows` reads them back (tokens by kind are not stored)."""
    unpriced = _value(row.unpriced) or {}
    agent = {
        "calls": row.agent_calls,
        "tokens": row.agent_tokens,
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_read_tokens": 0,
        "cost": row.agent_cost,
        "cached": 0,
        "unpriced": unpriced.get("agent", []),
    }
    judge = {"calls": row.judge_calls, "tokens": row.judge_tokens, "input_tokens": 0, "output_tokens": 0,
             "cache_read_tokens": 0, "cost": row.judge_cost, "cached": row.judge_cached,
             "unpriced": unpriced.get("judge", [])}  # fmt: skip
    return agent, judge


def _run_json(
    row: _RunRow,
    assertions: bytes,
    events: str,
    spans: str,
    agent: dict[str, Any],
    judge: dict[str, Any],
) -> bytes:
    """The run's record in `RunResult`'s field order without `eval_id`, `file` and `line` (`run_json`'s)."""
    head = _to_json({"run_index": row.run_index, "outcome": row.outcome, "duration_s": row.duration_s})
    middle = _to_json(
        {
            "sandbox_path": row.sandbox_path, "workspace_diff": row.workspace_diff, "agent_spend": agent,
            "judge_spend": judge, "case_id": row.case_id, "metadata": {},
        }
    )  # fmt: skip
    tail = _to_json(
        {
            "points": row.points, "points_possible": row.points_possible, "failure": row.failure_class,
            "attempts": row.attempts or 1, "identity": row.identity, "provenance": row.provenance,
            "carried_from": row.carried_from, "carried_index": row.carried_index,
        }
    )  # fmt: skip
    warnings = row.warnings
    return b"".join(
        (
            head[:-1], b',"error":', _raw(row.error), b',"skip_reason":', _to_json(row.skip_reason),
            b',"assertions":', assertions, b',"events":[', events.encode(), b"],",
            middle[1:-1], b',"variant":', _raw(row.variant), b',"group":null,"warnings":',
            b"[]" if warnings is None or warnings == "null" else warnings.encode(),
            b',"spans":[', spans.encode(), b"],", tail[1:-1], b',"sandbox":', _raw(row.sandbox), b"}",
        )
    )  # fmt: skip
