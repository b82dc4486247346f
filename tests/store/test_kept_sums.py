"""A closed suite run keeps what `diff` reads of each eval: its runs by outcome, cluster and agent cost (`eval_sums`)
and its scores summed per assertion (`eval_scores`); `diff` reads them instead of grouping the run's eval runs and
assertions again (SQLite and PostgreSQL). The rows are the sums a running run's read gives, a resumed run's are
summed afresh and kept again at its close, gc keeps a carrier's scores again, and a store from before is filled by
its migration."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Connection, delete, func, select

from niceeval import AssertionResult, RunResult
from niceeval._core.results import Spend
from niceeval._core.summary import PlannedEval
from niceeval.store import DiffOptions, Store, SuiteRunStart
from niceeval.store._costs import _PASSING, _RUNS
from niceeval.store._driver import session_of
from niceeval.store._kept_sums import _SUMS, ScoreSums, kept_counts, kept_usage, score_sums
from niceeval.store._recorder import SuiteEnd
from niceeval.store._schema import eval_scores, eval_sums, suite_tallies

from ._seeded_pair import record_pair
from .test_store import planned, record, recording, result

GRADED = [
    AssertionResult(name="rubric", severity="soft", score=0.25, threshold=0.5, state="failed", location="a.py:5"),
    AssertionResult(name="polite?", key="tone", severity="soft", score=0.5, threshold=0.5, state="passed",
                    location="a.py:6"),
    AssertionResult(name="includes('x')", severity="gate", score=1.0, threshold=1.0, state="passed",
                    location="a.py:7"),
    AssertionResult(name="judged", severity="soft", score=None, threshold=0.5, state="inconclusive",
                    location="a.py:8"),
]  # fmt: skip


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url) as opened:
        yield opened


def graded(eval_id: str, run_index: int, rubric: float) -> RunResult:
    """A run with a soft rubric scoring `rubric`, a keyed soft judge, a gate and an inconclusive judge."""
    rubric_result = GRADED[0].model_copy(update={"score": rubric})
    return result(eval_id, "scored", run_index=run_index).model_copy(
        update={"assertions": [rubric_result, *GRADED[1:]]}
    )


def ordered(sums: ScoreSums) -> list[tuple[str, str, str, float, int, int]]:
    return sorted((e, k or "", n, s, c, g) for e, k, n, s, c, g in sums)


def kept_rows(conn: Connection, suite_run_id: str) -> int:
    query = select(func.count()).select_from(eval_scores).where(eval_scores.c.suite_run_id == suite_run_id)
    return int(conn.execute(query).scalar_one())


def summed(conn: Connection, suite_run_id: str) -> ScoreSums:
    """The sums read from the run's assertions, as a running run's are."""
    found: ScoreSums = session_of(conn).execute(_SUMS, (suite_run_id,)).fetchall()
    return found


def test_a_closed_run_keeps_the_sums_its_assertions_give(store: Store) -> None:
    record(store, "run", [graded("e1", 0, 0.25), graded("e1", 1, 0.75), graded("e2", 0, 0.5)],
           plan=planned("e1", "e2", runs=2))  # fmt: skip
    with store.engine.connect() as conn:
        assert kept_rows(conn, "run") == 6
        kept = score_sums(conn, "run")
        assert (
            ordered(kept)
            == ordered(summed(conn, "run"))
            == [
                ("e1", "", "includes('x')", 2.0, 2, 0),
                ("e1", "", "rubric", 1.0, 2, 1),
                ("e1", "tone", "polite?", 1.0, 2, 1),
                ("e2", "", "includes('x')", 1.0, 1, 0),
                ("e2", "", "rubric", 0.5, 1, 1),
                ("e2", "tone", "polite?", 0.5, 1, 1),
            ]
        )
        assert all(isinstance(row[3], float) and isinstance(row[4], int) for row in kept)


def test_a_closed_run_keeps_each_evals_counts_cluster_and_agent_cost(store: Store) -> None:
    """Passed, scored, infra-failed and skipped runs, an unpriced run, an eval whose runs were all skipped, and one
    the plan did not name (its cost is summed, its counts are not a planned eval's)."""

    def spent(found: RunResult, cost: float | None) -> RunResult:
        return found.model_copy(update={"agent_spend": Spend(calls=1, tokens=10, cost=cost)})

    runs = [
        spent(result("a", "passed"), 0.25), spent(result("a", "scored", run_index=1), 0.5),
        spent(result("a", "failed", run_index=2).model_copy(update={"failure": "infra"}), 0.125),
        spent(result("a", "skipped", run_index=3), None),
        spent(result("b", "failed"), None), spent(result("b", "passed", run_index=1), 0.25),
        spent(result("c", "skipped"), 0.5),
        spent(result("stray", "passed"), 1.0),
    ]  # fmt: skip
    plan = [
        PlannedEval(id="a", file="a.py", line=1, runs=4, cluster="doc1"),
        PlannedEval(id="b", file="a.py", line=2, runs=2),
        PlannedEval(id="c", file="a.py", line=3, runs=1, cluster="doc1"),
    ]
    record(store, "run", runs, plan=plan)
    with store.engine.connect() as conn:
        assert kept_counts(conn, "run") == {
            "a": (1, 1, 1, 1, 2, "doc1"),
            "b": (1, 0, 1, 0, 2, None),
            "c": (0, 0, 0, 1, 0, "doc1"),
        }
        lenient, strict = kept_usage(conn, "run", strict=False), kept_usage(conn, "run", strict=True)
        assert sorted(lenient or []) == [("a", 3, 2, 0.875), ("b", 2, 1, None), ("stray", 1, 1, 1.0)]
        assert sorted(strict or []) == [("a", 3, 1, 0.875), ("b", 2, 1, None), ("stray", 1, 1, 1.0)]
        session = session_of(conn)
        for rule, kept in ((False, lenient), (True, strict)):
            summed_now = session.execute(_RUNS.format(passing=_PASSING[rule]), ("run",)).fetchall()
            assert sorted(summed_now) == sorted(kept or [])


def test_a_running_run_has_no_kept_counts_or_usage(store: Store) -> None:
    with recording(store) as recorder:
        recorder.begin(SuiteRunStart(id="run", command=["niceeval", "run"]), planned("e1"))
        recorder.add("run", [result("e1")])
        with store.engine.connect() as conn:
            assert kept_counts(conn, "run") is None and kept_usage(conn, "run", strict=False) is None
            assert conn.execute(select(func.count()).select_from(eval_sums)).scalar_one() == 0
        recorder.finish("run", SuiteEnd(status="finished", exit_code=0, duration_s=1.0))
    with store.engine.connect() as conn:
        assert kept_counts(conn, "run") == {"e1": (1, 0, 0, 0, 1, None)}


def test_the_diff_reads_the_kept_sums(store: Store) -> None:
    """Kept rows altered behind the store's back show in the diff: it read them, not the assertions."""
    record(store, "base", [graded("e1", 0, 0.25), graded("e2", 0, 0.5)])
    record(store, "head", [graded("e1", 0, 0.25), graded("e2", 0, 0.5)])
    assert store.diff("base", "head", DiffOptions(threshold=0.1)).scores == []
    with store.engine.begin() as conn:
        conn.execute(
            eval_scores.update()
            .where(eval_scores.c.suite_run_id == "head", eval_scores.c.eval_id == "e1", eval_scores.c.name == "rubric")
            .values(score_sum=0.75)
        )
    moved = store.diff("base", "head", DiffOptions(threshold=0.2)).scores
    assert [(s.eval_id, s.assertion, s.base, s.head) for s in moved] == [("e1", "rubric", 0.25, 0.75)]


def test_the_diff_reads_the_kept_counts_and_cost(store: Store) -> None:
    """Kept per-eval rows altered behind the store's back show in the diff: it read them, not the eval runs."""
    record(store, "base", [result(f"e{n}") for n in range(4)])
    record(store, "head", [result(f"e{n}") for n in range(4)])
    assert store.diff("base", "head").changed == [] and store.diff("base", "head").usage == []
    with store.engine.begin() as conn:
        in_head = (eval_sums.c.suite_run_id == "head", eval_sums.c.eval_id == "e1")
        conn.execute(eval_sums.update().where(*in_head).values(passed=0, failed=1))
        conn.execute(eval_sums.update().where(eval_sums.c.suite_run_id == "head").values(agent_cost=0.5))
    found = store.diff("base", "head", DiffOptions(threshold=0.3))
    assert [(c.eval_id, c.base, c.head) for c in found.changed] == [("e1", "passed", "failed")]
    assert [(u.measure, u.base, u.head) for u in found.usage] == [
        ("cost per eval run", 0.0, 0.5),
        ("cost per passed run", 0.0, pytest.approx(2.0 / 3)),  # three of the four passed
    ]


def test_the_seeded_pair_diffs_alike_from_kept_and_summed_scores(store: Store) -> None:
    record_pair(store)
    kept = store.diff("base", "head", DiffOptions(threshold=0.05))
    with store.engine.begin() as conn:
        for side in ("base", "head"):
            assert ordered(score_sums(conn, side)) == ordered(summed(conn, side))
        conn.execute(delete(eval_scores))  # rows gone but tallies kept: the diff must read the (empty) kept rows
    emptied = store.diff("base", "head", DiffOptions(threshold=0.06))
    assert kept.scores and kept.mean_scores
    assert emptied.scores == [] and emptied.mean_scores == []


def test_a_running_run_sums_its_assertions_and_keeps_them_at_its_close(store: Store) -> None:
    with recording(store) as recorder:
        recorder.begin(SuiteRunStart(id="run", command=["niceeval", "run"]), planned("e1"))
        recorder.add("run", [graded("e1", 0, 0.25)])
        with store.engine.connect() as conn:
            assert kept_rows(conn, "run") == 0
            assert ("e1", None, "rubric", 0.25, 1, 1) in score_sums(conn, "run")
        recorder.finish("run", SuiteEnd(status="finished", exit_code=0, duration_s=1.0))
    with store.engine.connect() as conn:
        assert kept_rows(conn, "run") == 3


def test_a_resumed_run_is_summed_afresh_and_kept_again(store: Store) -> None:
    record(store, "run", [graded("e1", 0, 0.25)], plan=planned("e1"))
    with recording(store) as recorder:
        recorder.extend("run", planned("e1", runs=2))  # a resume reopens it: its tally and kept sums no longer hold
        with store.engine.connect() as conn:
            assert conn.execute(select(suite_tallies.c.suite_run_id)).scalars().all() == []
        recorder.add("run", [graded("e1", 1, 0.75)])
        with store.engine.connect() as conn:
            assert ("e1", None, "rubric", 1.0, 2, 1) in score_sums(conn, "run")
        recorder.finish("run", SuiteEnd(status="finished", exit_code=0, duration_s=1.0))
    with store.engine.connect() as conn:
        assert ("e1", None, "rubric", 1.0, 2, 1) in score_sums(conn, "run")
        assert kept_rows(conn, "run") == 3


def test_gc_keeps_again_the_sums_of_a_run_that_carried_from_a_deleted_one(store: Store) -> None:
    executed = graded("e1", 0, 0.25).model_copy(update={"identity": "abc"})
    record(store, "first", [executed], plan=planned("e1"))
    carried = executed.model_copy(
        update={"provenance": "carried", "carried_from": "first", "carried_index": 0, "assertions": []}
    )
    record(store, "second", [carried, graded("e2", 0, 0.5)], plan=planned("e1", "e2"))
    with store.engine.connect() as conn:
        assert ("e1", None, "rubric", 0.25, 1, 1) in score_sums(conn, "second")  # the carried record's scores
    with recording(store) as recorder:
        assert recorder.gc(keep=1) == (1, 1)
    with store.engine.connect() as conn:
        assert ordered(score_sums(conn, "second")) == ordered(summed(conn, "second"))
        assert {row[0] for row in score_sums(conn, "second")} == {"e2"}


def test_gc_deletes_the_kept_sums_of_the_runs_it_deletes(store: Store) -> None:
    record(store, "old", [graded("e1", 0, 0.25)])
    record(store, "new", [graded("e1", 0, 0.5)])
    with recording(store) as recorder:
        assert recorder.gc(keep=1) == (1, 1)
    with store.engine.connect() as conn:
        for table in (eval_sums, eval_scores):
            assert conn.execute(select(table.c.suite_run_id).distinct()).scalars().all() == ["new"]


def test_a_store_from_before_kept_scores_is_upgraded_and_filled(store_url: str) -> None:
    """A store an older niceeval left at 0019_diff gets the table, filled for its closed runs (not a running one)."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import inspect

    from niceeval.store._open import _MIGRATIONS

    with Store.open(store_url) as store:
        record(store, "base", [graded("e1", 0, 0.25), graded("e2", 0, 0.5)])
        record(store, "head", [graded("e1", 0, 0.75), graded("e2", 0, 0.5)])
        with recording(store) as recorder:
            recorder.begin(SuiteRunStart(id="open", command=["niceeval", "run"]), planned("e1"))
            recorder.add("open", [graded("e1", 0, 0.5)])
        expected = store.diff("base", "head", DiffOptions(threshold=0.2))
        with store.engine.begin() as conn:
            config = Config()
            config.set_main_option("script_location", str(_MIGRATIONS))
            config.attributes["connection"] = conn
            command.downgrade(config, "0019_diff")
        assert "eval_scores" not in inspect(store.engine).get_table_names()
    with Store.open(store_url) as store:
        with store.engine.connect() as conn:
            assert (kept_rows(conn, "base"), kept_rows(conn, "head"), kept_rows(conn, "open")) == (6, 6, 0)
        assert store.diff("base", "head", DiffOptions(threshold=0.2, alpha=0.1)).scores == expected.scores
