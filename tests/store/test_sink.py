"""The store's sink (`StoreSink`): runs written off the event loop, committed as they finish, losses counted."""

from __future__ import annotations

import io
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, make_url, text

from niceeval._core.results import RunResult
from niceeval._core.summary import EvalTally, Plan, PlannedEval, SuiteSummary
from niceeval.store import Store, SuiteRunStart
from niceeval.store._connection import WriteConnection
from niceeval.store._driver import parse_url
from niceeval.store._recorder import Recorder, StoreSink, SuiteEnd
from niceeval.store._statements import RunRows

from .test_store import planned, result  # the same records as the store tests


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url) as opened:
        yield opened


OPENED: list[Recorder] = []
"""The recorders `recorder_of` opened, closed after each test (`conftest.py`)."""


def recorder_of(store: Store) -> Recorder:
    """What writes into `store`, as the runner opens it."""
    recorder = Recorder.of(store)
    OPENED.append(recorder)
    return recorder


def sink_of(store: Store, start: SuiteRunStart, **options: Any) -> StoreSink:
    """The sink recording suite run `start.id` into `store`, as the runner makes it."""
    return recorder_of(store).sink(start, **options)


def summary_of(plan_ids: list[str], *, interrupted: bool = False) -> SuiteSummary:
    tallies = [EvalTally(eval=p) for p in planned(*plan_ids)]
    for tally in tallies:
        tally.add(result(tally.eval.id))
    return SuiteSummary.of(
        tallies,
        problems=[],
        duration_s=2.0,
        strict=False,
        min_pass_rate=1.0,
        interrupted=interrupted,
    )


def wait_until_stored(store: Store, run_id: str, count: int) -> None:
    deadline = time.monotonic() + 30
    while len(store.outcomes(run_id)) < count:
        assert time.monotonic() < deadline, "the writer never stored the run"
        time.sleep(0.01)


def break_store(store: Store, url: str) -> None:
    """Make the store unusable under the sink's feet: the database dropped (PostgreSQL), its tables (SQLite)."""
    if store.engine.dialect.name == "postgresql":
        admin = create_engine(make_url(url).set(database="postgres"), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE "{store.engine.url.database}" WITH (FORCE)'))
        admin.dispose()
    else:
        with store.engine.begin() as conn:
            for table in ("judge_calls", "assertions", "events", "turns", "eval_runs"):
                conn.execute(text(f"DROP TABLE {table}"))


def test_a_finished_run_is_committed_before_the_suite_ends(store: Store) -> None:
    sink = sink_of(store, SuiteRunStart(id="s1"))
    sink.start(planned("a", "b"), [])
    sink.run_finished(result("a"))
    wait_until_stored(store, "s1", 1)  # visible to another connection while the suite still runs
    assert store.run("s1").run.status == "running"
    sink.run_finished(result("b", "failed", score=0.0))
    sink.finish(summary_of(["a", "b"]))
    sink.settle()
    info = store.run("s1").run
    assert (info.status, info.runs_done, info.passed, info.failed) == ("finished", 2, 1, 1)


def test_an_interrupted_suite_is_stored_as_interrupted(store: Store) -> None:
    sink = sink_of(store, SuiteRunStart(id="s1"))
    sink.start(planned("a", "b"), [])
    sink.run_finished(result("a"))
    sink.finish(summary_of(["a", "b"], interrupted=True))
    sink.settle()
    assert store.run("s1").run.status == "interrupted"


def test_many_runs_arriving_at_once_are_all_stored(store: Store) -> None:
    ids = [f"e{i}" for i in range(600)]  # more than one batch
    sink = sink_of(store, SuiteRunStart(id="s1"))
    sink.start(planned(*ids), [])
    for eval_id in ids:
        sink.run_finished(result(eval_id))
    sink.finish(summary_of(ids))
    sink.settle()
    assert len(store.outcomes("s1")) == 600 and sink.unstored == 0


def test_a_store_going_away_mid_run_is_a_warning_counting_the_unstored_runs(store: Store, store_url: str) -> None:
    warnings = io.StringIO()
    sink = sink_of(store, SuiteRunStart(id="s1"), warnings=warnings)
    sink.start(planned("a", "b", "c"), [])
    sink.run_finished(result("a"))
    wait_until_stored(store, "s1", 1)
    break_store(store, store_url)
    sink.run_finished(result("b"))
    sink.run_finished(result("c"))
    sink.finish(summary_of(["a", "b", "c"]))
    sink.settle()
    assert sink.unstored == 2
    assert "2 of 3 runs were not stored in the results store" in warnings.getvalue()
    assert "--resume s1" in warnings.getvalue()


def test_resume_without_an_id_skips_unfinished_pytest_sessions(store: Store) -> None:
    from niceeval._run.storing import plan_resume

    for run_id, kind in (("r1", "run"), ("p1", "pytest")):  # the pytest session is the latest
        sink = sink_of(store, SuiteRunStart(id=run_id, kind=kind))
        sink.start(planned("a", "b"), [])
        sink.run_finished(result("a"))
        sink.finish(summary_of(["a", "b"], interrupted=True))
        sink.settle()
    plan = plan_resume(recorder_of(store), SuiteRunStart(id="new"), [], None, None)
    assert plan.sink.run_id == "r1"  # `niceeval run --resume` finishes niceeval runs, never a pytest session


class CountingConnection(WriteConnection):
    """The real connection, counting the eval runs of each transaction that writes some."""

    adds: list[int]

    def add(self, suite_run_id: str, runs: Sequence[RunResult | RunRows]) -> None:
        self.adds.append(len(runs))
        super().add(suite_run_id, runs)

    def add_now(self, suite_run_id: str, runs: Sequence[RunResult | RunRows]) -> bool:
        written = super().add_now(suite_run_id, runs)
        self.adds += [len(runs)] if written else []
        return written

    def end_now(self, suite_run_id: str, runs: Sequence[RunResult | RunRows], end: SuiteEnd) -> bool:
        ended = super().end_now(suite_run_id, runs, end)
        self.adds += [len(runs)] if ended and runs else []
        return ended


def test_runs_finishing_close_together_share_one_transaction(store_url: str) -> None:
    Store.open(store_url).close()
    connection = CountingConnection.of_driver(parse_url(store_url))
    connection.adds = []
    ids = [f"e{i}" for i in range(20)]
    sink = Recorder(connection, url=store_url).sink(SuiteRunStart(id="s1"))
    sink.start(planned(*ids), [])
    for eval_id in ids:  # one run every 5 ms: a writer taking what had queued would commit nearly each alone
        sink.run_finished(result(eval_id))
        time.sleep(0.005)
    sink.finish(summary_of(ids))
    sink.settle()
    assert sum(connection.adds) == 20 and len(connection.adds) <= 2  # gathered a quarter second at a time
    assert sink.store.run("s1").run.runs_done == 20
    sink.close()


ENDS_WITHOUT_WAITING = """
import sys
sys.path.insert(0, sys.argv[2])
from niceeval.store import Store, SuiteRunStart
from store.test_sink import planned, result, sink_of, summary_of

store = Store.open(sys.argv[1])
sink = sink_of(store, SuiteRunStart(id="s1"))
sink.start(planned("a", "b"), [])
sink.run_finished(result("a"))
sink.run_finished(result("b", "failed", score=0.0))
sink.finish(summary_of(["a", "b"]))
print("finish returned", flush=True)
"""


def test_finish_returns_at_once_and_the_process_still_waits_for_the_last_runs(store_url: str, tmp_path: Path) -> None:
    """The other reporters write their summaries while the writer takes the last runs; a process that ends right
    after (an error in a later reporter, a script that never closes the sink) still stores them."""
    done = subprocess.run(
        [sys.executable, "-c", ENDS_WITHOUT_WAITING, store_url, str(Path(__file__).parent.parent)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "finish returned\n"
    with Store.open(store_url) as store:
        info = store.run("s1").run
        assert (info.status, info.runs_done, info.passed, info.failed) == ("finished", 2, 1, 1)


def test_what_reads_the_outcome_waits_for_the_writer(store: Store) -> None:
    sink = sink_of(store, SuiteRunStart(id="s1"))
    sink.start(planned("a"), [])
    sink.run_finished(result("a"))
    sink.finish(summary_of(["a"]))
    assert (sink.unstored, sink.error) == (0, None)  # settled on reading
    assert store.run("s1").run.status == "finished"


def test_the_sink_walks_the_suites_plan_once_and_takes_its_adaptive_evals_from_the_records_it_holds(
    store: Store,
) -> None:
    """The suite's plan reads its datasets at each walk: the sink writes the rows and counts the runs planned on
    one walk, and the adaptive evals (whose runs grow as repeats are queued) are the records the suite holds."""
    records = planned("a", "b", "c")
    records[1].first_runs = 1  # `b` runs under adaptive repeats: the suite holds its record
    walks: list[int] = []

    def read() -> Iterator[PlannedEval]:
        walks.append(1)
        return iter(records)

    sink = sink_of(store, SuiteRunStart(id="held"))
    sink.start(Plan(read, len(records), lambda eval_id: None, [records[1]]), [])
    records[1].runs = 3  # two repeats queued, raised in place
    for eval_id, run_index in (("a", 0), ("b", 0), ("b", 1), ("b", 2), ("c", 0)):
        sink.run_finished(result(eval_id, run_index=run_index))
    sink.finish(summary_of(["a", "b", "c"]))
    sink.settle()
    assert len(walks) == 1
    assert [(p.id, p.runs) for p in store.planned("held")] == [("a", 1), ("b", 3), ("c", 1)]
    assert store.run("held").run.runs_done == 5
