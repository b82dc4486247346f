"""The recorder: the store written through its DB-API driver, read back through SQLAlchemy as if SQLAlchemy had
written it (every column, on SQLite and PostgreSQL), ids exact under concurrent writers, failures counted."""

from __future__ import annotations

import io
import json
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import JSON, DateTime, create_engine, insert, select, text

from niceeval import AssertionResult, RunResult
from niceeval._core.events import MessageEvent
from niceeval._core.redact import Redactor, is_clean, scrub_run
from niceeval._core.spans import SpanRecord
from niceeval._core.summary import Plan, PlannedEval
from niceeval.store import Store, SuiteRunStart, _driver
from niceeval.store._connection import WriteConnection
from niceeval.store._driver import connect, parse_url, stamp_sqlite, store_wide
from niceeval.store._recorder import Recorder
from niceeval.store._schema import metadata
from niceeval.store._statements import PLAN_BATCH, SUITE_START, WRITTEN
from niceeval.store._suite_run import SuiteEnd

from .test_sink import summary_of, wait_until_stored
from .test_store import full_result, planned, result

TABLES = ("suite_runs", "suite_evals", "eval_runs", "assertions", "judge_calls", "events", "turns", "spans")


@pytest.fixture
def writer(store_url: str, tmp_path: Path) -> Iterator[Recorder]:
    Store.open(store_url).close()  # made at this niceeval's schema: the run's writer opens it from then on
    opened = Recorder.open(store_url, tmp_path)
    yield opened
    opened.close()


def odd_result() -> RunResult:
    """Text a store must keep (unicode, quotes, control characters) or make storable (lone surrogates, NUL)."""
    return RunResult(
        eval_id="evals/ü.py::naïve 'quoted' \"run\"",
        file="evals/ü.py",
        line=1,
        run_index=0,
        outcome="scored",
        duration_s=0.0,
        skip_reason="tab\there, emoji 🎉, broken \udc80 half",
        case_id=None,
        variant={"model": "ß", "prompt": 'short "one"'},
        assertions=[
            AssertionResult(
                name="ok ✓", severity="gate", score=None, threshold=1.0, state="inconclusive", reason="\x00"
            )
        ],
        events=[
            MessageEvent(role="user", text="こんにちは \ud800", seq=0, at=datetime(2026, 1, 2, 3, 4, 5, 6, UTC)),
            MessageEvent(role="assistant", text="NUL \x00 here", data={"k\x00": ["\x00"]}, seq=1),
        ],
        spans=[SpanRecord(trace_id="t", span_id="s", name="agent ✓", start_ns=2**62, attributes={"n": 1.5})],
    )


def test_the_written_columns_are_the_schema_tables_columns() -> None:
    for columns in WRITTEN:
        table = metadata.tables[columns.table]
        names = set(table.c.keys())
        if columns is SUITE_START:  # a new suite run: its totals and end keep their defaults
            assert set(columns.names) <= names
            required = {c.name for c in table.c if not c.nullable and c.server_default is None}
            assert required <= set(columns.names)
        else:
            assert sorted(columns.names) == sorted(names), columns.table
        assert columns.json == {c.name for c in table.c if isinstance(c.type, JSON)} & set(columns.names)
        assert columns.when == {c.name for c in table.c if isinstance(c.type, DateTime)} & set(columns.names)
        assert len(set(columns.names)) == len(columns.names)


def test_what_the_writer_stores_reads_back_equal_through_store(writer: Recorder, store_url: str) -> None:
    written = [full_result(), odd_result()]
    writer.begin(SuiteRunStart(id="w1", command=["niceeval", "run", "ü"]), planned(*(r.eval_id for r in written)))
    writer.add("w1", written)
    end = SuiteEnd(status="finished", exit_code=1, duration_s=2.5, errors=({"location": "x", "message": "é"},))
    writer.finish("w1", end)
    with Store.open(store_url) as store:
        assert store.eval_run("w1", written[0].eval_id, 1) == written[0]
        odd = store.eval_run("w1", written[1].eval_id, 0)
        assert odd == scrub_run(written[1], storable=True)
        assert odd.skip_reason == "tab\there, emoji 🎉, broken \ufffd half"
        assert odd.events[0].text == "こんにちは \ufffd"
        # PostgreSQL's text holds no NUL (the run was lost there): replaced on both databases alike
        assert (odd.events[1].text, odd.events[1].data) == ("NUL \ufffd here", {"k\ufffd": ["\ufffd"]})
        assert odd.assertions[0].reason == "\ufffd" and "\x00" not in odd.model_dump_json()
        info = store.run("w1").run
    assert (info.status, info.exit_code, info.duration_s, info.runs_done, info.failed, info.scored) == (
        "finished", 1, 2.5, 2, 1, 1,
    )  # fmt: skip
    assert info.command == ["niceeval", "run", "ü"] and info.errors == [{"location": "x", "message": "é"}]
    assert (info.agent_cost, info.judge_cost, info.git_dirty, info.strict) == (0.001, 0.0012, None, False)


def _raw(url: str, table: str) -> list[tuple[object, ...]]:
    """Every row of `table` as the database holds it, in key order; a JSON column's text parsed (the writer's JSON
    is compact and UTF-8, SQLAlchemy's `json.dumps` spaced and ASCII-escaped: the same JSON values)."""
    target = parse_url(url)
    if target.kind == "sqlite":
        json_at = [i for i, column in enumerate(metadata.tables[table].c) if isinstance(column.type, JSON)]
        with closing(sqlite3.connect(target.database or "")) as conn:  # `with` a connection commits, never closes
            rows = conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
        return [tuple(json.loads(v) if i in json_at and v is not None else v for i, v in enumerate(r)) for r in rows]
    import psycopg

    with psycopg.connect(host=target.query["host"], user=target.username, dbname=target.database) as conn:
        # jsonb: the JSON columns' values, whatever their spacing; the rest as PostgreSQL holds it
        return conn.execute(f"SELECT to_jsonb(t)::text FROM {table} t ORDER BY 1").fetchall()  # type: ignore[arg-type]


def test_the_writer_stores_every_value_as_sqlalchemy_would(
    writer: Recorder, store_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """What SQLAlchemy reads back from the writer's rows and writes again holds the very same values."""
    writer.begin(SuiteRunStart(id="w1", command=["a"], git_dirty=True, parent_id=None), planned("evals/a.py::refund"))
    writer.add("w1", [full_result(), odd_result(), result("plain")])
    writer.finish("w1", SuiteEnd(status="finished", exit_code=0, duration_s=1.0))
    if parse_url(store_url).kind == "sqlite":
        again = f"sqlite:///{tmp_path / 'again.db'}"
    else:
        again = request.getfixturevalue("postgres").database()
    Store.open(again).close()
    source, target = create_engine(store_url), create_engine(again)
    with source.connect() as read, target.begin() as write:
        for name in TABLES:
            rows = [dict(row) for row in read.execute(select(metadata.tables[name])).mappings()]
            assert rows, name
            write.execute(insert(metadata.tables[name]), rows)
    source.dispose()
    target.dispose()
    for name in TABLES:
        assert _raw(store_url, name) == _raw(again, name), name


WRITER_SCRIPT = """
import sys
from niceeval import AssertionResult, RunResult
from niceeval._core.assertion import JudgeCall
from niceeval._core.summary import PlannedEval
from niceeval.store import SuiteRunStart
from niceeval.store._recorder import Recorder, SuiteEnd

url, me = sys.argv[1], sys.argv[2]
writer = Recorder.open(url, __import__("pathlib").Path.cwd())
ids = [f"{me}-{i}" for i in range(120)]
writer.begin(SuiteRunStart(id=me), [PlannedEval(id=i, file="f", line=1) for i in ids])
def run(eval_id):
    calls = [JudgeCall(model=eval_id)]
    return RunResult(eval_id=eval_id, file="f", line=1, run_index=0, outcome="passed", duration_s=0.0, assertions=[
        AssertionResult(name=f"{eval_id}/{k}", severity="gate", score=1.0, threshold=1.0, state="passed",
                        judge_calls=calls) for k in range(2)])
for start in range(0, len(ids), 8):
    writer.add(me, [run(i) for i in ids[start:start + 8]])
writer.finish(me, SuiteEnd(status="finished", exit_code=0, duration_s=0.0))
print("sqlalchemy" in sys.modules)
"""


def test_two_processes_writing_one_store_at_once_get_no_id_clash(writer: Recorder, store_url: str) -> None:
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER_SCRIPT, store_url, me], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for me in ("p1", "p2")
    ]
    for process in writers:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err.decode()
        assert out.decode().strip() == "False"  # written without SQLAlchemy
    with Store.open(store_url) as store:
        for me in ("p1", "p2"):
            stored = list(store.results(me))
            assert len(stored) == 120 and store.run(me).run.passed == 120
            for run in stored:  # every child row under its own parent
                assert [a.name for a in run.assertions] == [f"{run.eval_id}/0", f"{run.eval_id}/1"]
                assert [c.model for a in run.assertions for c in a.judge_calls] == [run.eval_id, run.eval_id]


def test_a_locked_sqlite_store_makes_the_writer_wait_for_the_other_writer(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'results.db'}"
    Store.open(url).close()
    writer = Recorder.open(url, tmp_path)
    other = sqlite3.connect(tmp_path / "results.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # another process writing
    release = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    release.start()
    writer.begin(SuiteRunStart(id="s1"), planned("a"))  # waits for the lock, then writes
    release.join()
    other.close()
    writer.add("s1", [result("a")])
    writer.close()
    with Store.open(url) as store:
        assert store.outcomes("s1") == {("a", 0): "passed"}


def test_a_store_locked_past_the_wait_is_a_warning_counting_the_unstored_runs(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'results.db'}"
    Store.open(url).close()
    impatient = sqlite3.connect(tmp_path / "results.db", timeout=0.05, isolation_level=None, check_same_thread=False)
    connection = WriteConnection.of_driver(parse_url(url), impatient)  # as it is, waiting 50 ms instead of 60 s
    warnings = io.StringIO()
    sink = Recorder(connection, url=url).sink(SuiteRunStart(id="s1"), warnings=warnings)
    sink.start(planned("a", "b"), [])
    other = sqlite3.connect(tmp_path / "results.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        sink.run_finished(result("a"))
        sink.run_finished(result("b"))
        sink.finish(summary_of(["a", "b"]))
        sink.settle()
    finally:
        other.execute("COMMIT")
        other.close()
    sink.close()
    assert sink.unstored == 2 and sink.error == "OperationalError: database is locked"
    assert "2 of 2 runs were not stored in the results store" in warnings.getvalue()


def test_a_sqlite_stamp_is_the_wall_clock_isoformat_to_the_microsecond() -> None:
    """The per-second cache gives what `isoformat` gives, in any zone, and stays bounded."""
    zones = [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8)), None]
    start = datetime(2026, 12, 31, 23, 59, 58, 999_999, tzinfo=UTC)
    moments = [start + timedelta(microseconds=1_731 * i) for i in range(3_000)]
    moments += [datetime(5, 1, 2, 3, 4, 5), datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 6, 1, 12, 0, 0, 1)]
    for when in moments:
        for zone in zones:
            local = when.astimezone(zone) if zone and when.tzinfo else when
            assert stamp_sqlite(local) == local.isoformat(" ", "microseconds")[:26], local
    for second in range(5_000):
        stamp_sqlite(start + timedelta(seconds=second))
    assert len(_driver._SECONDS) <= 4_096


def test_none_and_bool_parameters_are_stored_as_null_and_integers_in_any_sqlite_connection(tmp_path: Path) -> None:
    """The writer's adapters for `None` and `bool` (process-wide) store what `sqlite3` stores without them."""
    connect(parse_url(f"sqlite:///{tmp_path / 'store.db'}")).close()
    assert (type(None), sqlite3.PrepareProtocol) in sqlite3.adapters
    other = sqlite3.connect(tmp_path / "theirs.db")  # the user's own database, in the same process
    other.execute("CREATE TABLE t (a, b, c)")
    other.execute("INSERT INTO t VALUES (?, ?, ?)", (None, True, False))
    assert other.execute("SELECT typeof(a), a, typeof(b), b, c FROM t").fetchall() == [("null", None, "integer", 1, 0)]
    other.close()


def test_a_bool_adapter_the_program_registered_is_left_in_place(tmp_path: Path) -> None:
    key = (bool, sqlite3.PrepareProtocol)
    before = sqlite3.adapters.pop(key, None)  # the process-wide registry: put back as it was after
    try:
        sqlite3.register_adapter(bool, str)
        connect(parse_url(f"sqlite:///{tmp_path / 'store.db'}")).close()
        assert sqlite3.adapters[key] is str
    finally:
        sqlite3.adapters.pop(key, None)
        if before is not None:
            sqlite3.adapters[key] = before


def test_driver_failures_of_the_store_itself_are_store_wide(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as holder:
        holder.execute("BEGIN EXCLUSIVE")
        with closing(sqlite3.connect(path, timeout=0)) as other, pytest.raises(sqlite3.OperationalError) as locked:
            other.execute("CREATE TABLE t (x)")
        holder.execute("ROLLBACK")
        holder.execute("CREATE TABLE t (x PRIMARY KEY)")
        holder.execute("INSERT INTO t VALUES (1)")
        with pytest.raises(sqlite3.IntegrityError) as clash:
            holder.execute("INSERT INTO t VALUES (1)")
    assert store_wide(locked.value) and not store_wide(clash.value)  # a clash is one run's, not the store's


def test_a_postgresql_connection_lost_mid_run_fails_one_batch_and_the_next_reconnects(
    postgres: object, tmp_path: Path
) -> None:
    url = postgres.database()  # type: ignore[attr-defined]
    Store.open(url).close()
    writer = Recorder.open(url, tmp_path)
    warnings = io.StringIO()
    sink = writer.sink(SuiteRunStart(id="s1"), warnings=warnings)
    sink.start(planned("a", "b", "c"), [])
    sink.run_finished(result("a"))
    with Store.open(url) as store:
        wait_until_stored(store, "s1", 1)
        with store.engine.connect() as conn:  # the server drops the writer's connection
            conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            )
            conn.commit()
        sink.run_finished(result("b"))
        sink.finish(summary_of(["a", "b", "c"]))
        sink.settle()
        sink.close()
        assert sink.unstored == 1 and sink.error == "AdminShutdown: terminating connection due to administrator command"
        assert "1 of 2 runs were not stored" in warnings.getvalue()
        info = store.run("s1").run  # the suite run's end was written over a new connection
    assert (info.status, info.runs_done) == ("incomplete", 1)


def test_a_result_the_runner_found_clean_is_not_scrubbed_again_and_anything_else_is() -> None:
    redactor = Redactor.from_environment({"OPENAI_API_KEY": "sk-live-secret-value-123456"})
    clean = redactor.run(result("a"))
    assert is_clean(clean) and scrub_run(clean, storable=True) is clean  # the store's pass would change nothing
    assert not is_clean(clean.model_copy(update={"skip_reason": "key sk-live-secret-value-123456"}))
    assert not is_clean(result("b"))  # never checked
    secret = redactor.run(result("c").model_copy(update={"skip_reason": "sk-live-secret-value-123456"}))
    assert not is_clean(secret) and secret.skip_reason == "[redacted:OPENAI_API_KEY]"
    broken = redactor.run(odd_result())  # lone surrogates: kept for the console, replaced by the store
    assert not is_clean(broken) and "\udc80" in (broken.skip_reason or "")
    nul = redactor.run(result("d").model_copy(update={"skip_reason": "a\x00b"}))  # NUL: likewise
    assert not is_clean(nul) and nul.skip_reason == "a\x00b"
    assert scrub_run(nul, storable=True).skip_reason == "a\ufffdb"


OPENS = (
    "import sys, pathlib\n"
    "from niceeval.store._recorder import Recorder\n"
    "recorder = Recorder.open(sys.argv[1], pathlib.Path())\n"
    "print(recorder.url, 'sqlalchemy' in sys.modules)\n"
    "recorder.close()\n"
)


def test_a_store_not_at_this_schema_yet_is_opened_as_a_store_and_then_by_the_writer(
    store_url: str, tmp_path: Path
) -> None:
    """A new (or older) store goes through `Store`, which creates (or migrates) it; from then on the run's writer
    opens it, without importing SQLAlchemy, and names it as `Store` does."""
    opened = [
        subprocess.run([sys.executable, "-c", OPENS, store_url], capture_output=True, text=True, timeout=60)
        for _ in range(2)
    ]
    (first, made), (second, plain) = (done.stdout.split() for done in opened)
    assert (made, plain) == ("True", "False"), opened[1].stderr
    with Store.open(store_url) as store:
        assert first == second == store.url


def test_a_suite_run_records_the_commit_its_branch_and_whether_tracked_files_changed(tmp_path: Path) -> None:
    from niceeval._run.storing import suite_start

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=tmp_path, capture_output=True, text=True, timeout=30, check=True,
        )  # fmt: skip
        return done.stdout.strip()

    def state() -> tuple[str | None, str | None, bool | None]:
        start = suite_start(tmp_path, None, strict=False, min_pass_rate=1.0, command=["niceeval"])
        return start.git_commit, start.git_branch, start.git_dirty

    assert state() == (None, None, None)  # not a repository
    git("init", "-q", "-b", "main")
    assert state() == (None, None, None)  # no commit yet
    (tmp_path / "a.txt").write_text("a")
    git("add", "a.txt")
    git("commit", "-q", "-m", "a")
    commit = git("rev-parse", "HEAD")
    (tmp_path / "new.txt").write_text("untracked")
    assert state() == (commit, "main", False)  # an untracked file is no change
    (tmp_path / "a.txt").write_text("b")
    assert state() == (commit, "main", True)
    git("checkout", "-q", "--detach")
    assert state() == (commit, "HEAD", True)  # what `git rev-parse --abbrev-ref HEAD` says when detached


def test_an_unreachable_postgresql_store_stops_the_run_naming_it_without_its_password(tmp_path: Path) -> None:
    from niceeval.store import StoreError

    url = f"postgresql://ci:s3cret-pass@/evals?host={tmp_path / 'no-server'}"
    with pytest.raises(StoreError) as refused:
        Recorder.open(url, tmp_path)
    message = str(refused.value)
    assert message.startswith("cannot open the results store postgresql+psycopg://ci:***@/evals?host=")
    assert message.endswith("Check the URL, or pass --no-store to run without it.")
    assert "s3cret-pass" not in message


def test_a_batch_of_runs_is_written_in_few_statements_not_one_per_row(tmp_path: Path) -> None:
    """The driver lets go of the interpreter around every statement: a statement per row made the writer thread and
    the event loop trade it about ten times per eval run."""
    url = f"sqlite:///{tmp_path / 'results.db'}"
    Store.open(url).close()
    from niceeval.store._driver import DIALECTS, connect, writing
    from niceeval.store._statements import insert_runs, insert_suite

    runs = [full_result().model_copy(update={"eval_id": f"evals/a.py::e{i}"}) for i in range(100)]
    connection = connect(parse_url(url))
    statements: list[str] = []
    connection.set_trace_callback(statements.append)
    try:
        with writing(connection, DIALECTS["sqlite"]) as session:
            insert_suite(session, SuiteRunStart(id="b1", command=["niceeval"]), planned(*(r.eval_id for r in runs)))
        statements.clear()
        with writing(connection, DIALECTS["sqlite"]) as session:
            insert_runs(session, "b1", runs)
    finally:
        connection.close()
    inserts = [s for s in statements if s.startswith("INSERT")]
    rows = {table: len(_raw(url, table)) for table in ("eval_runs", "assertions", "judge_calls", "events", "turns")}
    per_run = {table: count // 100 for table, count in rows.items()}
    assert sum(rows.values()) >= 100 * 5 and all(per_run.values())
    assert len(inserts) <= 30, f"{len(inserts)} INSERT statements for {sum(rows.values())} rows"
    with Store.open(url) as store:
        assert store.eval_run("b1", "evals/a.py::e42", 1) == runs[42]


def test_two_threads_writing_through_one_recorder_never_meet_in_a_transaction(writer: Recorder) -> None:
    """A pytest session plans more runs from its own thread while the writer thread writes a batch: each waits for
    the other's transaction (sharing one, the second `BEGIN` failed and its runs were lost)."""
    writer.begin(SuiteRunStart(id="s1"), planned(*(f"e{i}" for i in range(100))))
    errors: list[BaseException] = []

    def write(one: Callable[[int], None]) -> None:
        for i in range(100):
            try:
                one(i)
            except Exception as exc:
                errors.append(exc)

    threads = [
        threading.Thread(target=write, args=(lambda i: writer.add("s1", [result(f"e{i}")]),)),
        threading.Thread(target=write, args=(lambda i: writer.extend("s1", planned(f"more{i}")),)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert (len(writer.store.outcomes("s1")), len(writer.store.planned("s1"))) == (100, 200)


def test_a_plan_larger_than_a_batch_is_stored_whole_in_order_and_extended_after_it(
    writer: Recorder, store_url: str
) -> None:
    ids = [f"evals/a.py::qa[q{i}]" for i in range(PLAN_BATCH * 2 + 3)]
    writer.begin(SuiteRunStart(id="big"), planned(*ids))
    more = planned(ids[-1], "evals/a.py::late", runs=3)  # one already planned (its runs raised), one new
    writer.extend("big", more)
    with Store.open(store_url) as store:
        stored = store.planned("big")
        info = store.run("big").run
    assert [p.id for p in stored] == [*ids, "evals/a.py::late"]
    assert [p.line for p in stored[:3]] == [1, 2, 3] and stored[-1].line == 2
    assert (stored[-2].runs, stored[-1].runs, stored[0].runs) == (3, 3, 1)
    assert (info.evals, info.runs_planned) == (len(ids) + 1, len(ids) - 1 + 3 + 3)


def test_a_streamed_plan_is_walked_a_fixed_number_of_times_whatever_its_batches(writer: Recorder) -> None:
    """The suite's plan reads its datasets again on each walk: writing it batch by batch must not walk it per
    batch (a million cases would be read 245 times, each walk holding the whole plan)."""
    ids = [f"evals/a.py::qa[q{i}]" for i in range(PLAN_BATCH * 3 + 1)]
    records = planned(*ids)
    walks: list[int] = []

    def read() -> Iterator[PlannedEval]:
        walks.append(1)
        return iter(records)

    writer.begin(SuiteRunStart(id="streamed"), Plan(read, len(records), lambda eval_id: None))
    assert [p.id for p in writer.store.planned("streamed")] == ids
    assert len(walks) == 1  # the rows written and the runs planned summed on one pass
    assert writer.store.run("streamed").run.runs_planned == len(ids)
