"""A suite run's slots find their records one by one (`_records.RECORD_ID`): an executed slot its own row, a carried
or accepted one the row it points to, by the eval runs' unique key (SQLite and PostgreSQL). The score sums kept at
the close and read while running, and each slot's turn latencies, count exactly those records: an eval mixing
executed and carried slots, a slot carrying another index than its own, and another suite run holding the same
eval at the same index never mix."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Connection

from niceeval import AssertionResult, RunResult
from niceeval._core.events import MessageEvent
from niceeval.store import Store
from niceeval.store._costs import case_usage
from niceeval.store._kept_sums import ScoreSums, score_sums

from .test_kept_sums import kept_rows, summed
from .test_store import planned, record, recording, result


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url) as opened:
        yield opened


def scored(eval_id: str, run_index: int, rubric: float, *, latency: float) -> RunResult:
    """An executed run: a soft rubric scoring `rubric`, a gate, and one reply taking `latency` seconds."""
    rubric_result = AssertionResult(
        name="rubric", severity="soft", score=rubric, threshold=0.5, state="passed", location="a.py:5"
    )
    return result(eval_id, "scored", run_index=run_index).model_copy(
        update={
            "identity": f"{eval_id}@1",
            "assertions": [rubric_result, *result(eval_id).assertions],
            "events": [MessageEvent(role="assistant", text="hi", latency=latency, seq=0)],
        }
    )


def pointing(executed: RunResult, suite_run_id: str, run_index: int, provenance: str = "carried") -> RunResult:
    """A slot at `run_index` that carries (or accepts) `executed`, recorded in `suite_run_id`: its summary only."""
    return executed.model_copy(
        update={
            "run_index": run_index, "provenance": provenance, "carried_from": suite_run_id,
            "carried_index": executed.run_index, "assertions": [], "events": [],
        }
    )  # fmt: skip


def ordered(sums: ScoreSums) -> list[tuple[str, str, float, int, int]]:
    return sorted((e, n, round(s, 12), c, g) for e, _, n, s, c, g in sums)


def latencies(conn: Connection, suite_run_id: str) -> dict[str, list[float]]:
    return {e: sorted(seconds) for e, seconds in case_usage(conn, suite_run_id, strict=False).latencies.items()}


@pytest.fixture
def carrier(store: Store) -> Store:
    return filled(store)


def filled(store: Store) -> Store:
    """`first` executed e1 twice and e2 once; `other` holds e1 and e2 at the same indexes with other scores;
    `carrier` carries e1's run 1 into its slot 0 and accepts e2's run 0, and executes e1's slot 1 and e3."""
    first = [scored("e1", 0, 0.25, latency=1.0), scored("e1", 1, 0.75, latency=2.0), scored("e2", 0, 0.5, latency=3.0)]
    record(store, "first", first, plan=planned("e1", "e2", runs=2))
    others = [scored("e1", 0, 0.0, latency=9.0), scored("e1", 1, 0.0, latency=9.0), scored("e2", 0, 0.0, latency=9.0)]
    record(store, "other", others, plan=planned("e1", "e2", runs=2))
    slots = [
        pointing(first[1], "first", 0),
        scored("e1", 1, 0.5, latency=4.0),
        pointing(first[2], "first", 0, provenance="accepted"),
        scored("e3", 0, 1.0, latency=5.0),
    ]
    record(store, "carrier", slots, plan=planned("e1", "e2", "e3", runs=2))
    return store


EXPECTED = [
    ("e1", "includes('x')", 2.0, 2, 0),
    ("e1", "rubric", 1.25, 2, 1),  # 0.75 carried from first's run 1 and 0.5 executed here
    ("e2", "includes('x')", 1.0, 1, 0),
    ("e2", "rubric", 0.5, 1, 1),  # accepted from first's run 0
    ("e3", "includes('x')", 1.0, 1, 0),
    ("e3", "rubric", 1.0, 1, 1),
]


def test_a_closed_run_keeps_the_scores_of_its_executed_and_carried_slots(carrier: Store) -> None:
    with carrier.engine.connect() as conn:
        assert kept_rows(conn, "carrier") == 6
        assert ordered(score_sums(conn, "carrier")) == EXPECTED


def test_a_running_run_sums_its_executed_and_carried_slots_as_its_close_keeps_them(carrier: Store) -> None:
    with carrier.engine.connect() as conn:
        assert ordered(summed(conn, "carrier")) == EXPECTED


def test_the_carried_slots_latencies_are_their_records(carrier: Store) -> None:
    with carrier.engine.connect() as conn:
        assert latencies(conn, "carrier") == {"e1": [2.0, 4.0], "e2": [3.0], "e3": [5.0]}


def test_a_slot_whose_record_gc_deleted_is_summed_as_nothing(carrier: Store) -> None:
    with recording(carrier) as recorder:
        assert recorder.gc(keep=2) == (1, 3)  # `first`, which `carrier` carries from, is the oldest
    with carrier.engine.connect() as conn:
        expected = [row for row in EXPECTED if row[0] != "e2"]
        expected[:2] = [("e1", "includes('x')", 1.0, 1, 0), ("e1", "rubric", 0.5, 1, 1)]
        assert ordered(score_sums(conn, "carrier")) == expected == ordered(summed(conn, "carrier"))
        assert latencies(conn, "carrier") == {"e1": [4.0], "e3": [5.0]}


def test_on_postgresql_the_close_keeps_the_scores_uncompiled_for_its_transaction_alone(postgres: object) -> None:
    """PostgreSQL costs the carried lookup for every slot and would compile a big run's statement (JIT) for longer
    than it runs: the close turns JIT off for its own transaction (SQLite compiles no plan)."""
    from niceeval.store._driver import session_of
    from niceeval.store._kept_sums import keep_sums

    with Store.open(postgres.database()) as store, filled(store).engine.connect() as conn:  # type: ignore[attr-defined]
        setting = conn.exec_driver_sql("SHOW jit").scalar_one()
        conn.rollback()
        with conn.begin():
            keep_sums(session_of(conn), "carrier")
            assert conn.exec_driver_sql("SHOW jit").scalar_one() == "off"
        assert conn.exec_driver_sql("SHOW jit").scalar_one() == setting
        assert ordered(score_sums(conn, "carrier")) == EXPECTED
