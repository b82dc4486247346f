"""`Store.diff` reads each side's cost and turn latency back from the store (SQLite and PostgreSQL) and gates on
them; a limit it cannot check fails with the reason."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from niceeval import RunResult
from niceeval._core.events import MessageEvent
from niceeval._core.outcome import Outcome
from niceeval._core.results import Spend
from niceeval._core.summary import PlannedEval
from niceeval.store import DiffOptions, Store, SuiteRunStart
from niceeval.store._recorder import Recorder, SuiteEnd


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url) as opened:
        yield opened


def run(eval_id: str, *, cost: float | None, turns: tuple[float, ...] = (), outcome: Outcome = "passed") -> RunResult:
    events = [MessageEvent(role="assistant", text="hi", latency=seconds, seq=n) for n, seconds in enumerate(turns)]
    spend = Spend(calls=1, tokens=10, cost=cost, unpriced=[] if cost is not None else ["openai/mystery"])
    return RunResult(eval_id=eval_id, file="evals/a.py", line=1, outcome=outcome, duration_s=0.1, events=events,
                     agent_spend=spend)  # fmt: skip


def record(store: Store, run_id: str, results: list[RunResult]) -> None:
    plan = [PlannedEval(id=r.eval_id, file="evals/a.py", line=1) for r in results]
    recorder = Recorder.of(store)
    try:
        recorder.begin(SuiteRunStart(id=run_id, command=["niceeval", "run"]), plan)
        recorder.add(run_id, results)
        recorder.finish(run_id, SuiteEnd(status="finished", exit_code=0, duration_s=1.0))
    finally:
        recorder.close()


def test_turn_latencies_are_read_from_the_stored_replies(store: Store) -> None:
    record(store, "base", [run(f"e{i}", cost=0.001, turns=(1.0, 1.0 + i / 10)) for i in range(8)])
    record(store, "head", [run(f"e{i}", cost=0.001, turns=(2.0, 2.0 + i / 5)) for i in range(8)])
    diff = store.diff("base", "head", DiffOptions(max_latency_increase=0.5))
    p50, p95 = (u for u in diff.usage if u.measure.endswith("latency"))
    assert (p50.base, p50.head, p50.base_text, p50.head_text) == pytest.approx((1.0, 2.0, "1.00s", "2.00s"))
    # 16 turns a side; p95 sits at rank 15 * 0.95 = 14.25 of the sorted turns: 1.6 + 0.25 * (1.7 - 1.6)
    assert (p95.base, p95.head) == pytest.approx((1.625, 3.25))
    assert p50.change == "worse" and p50.relative == pytest.approx(1.0)
    assert diff.regressed and len(diff.reasons) == 2
    assert [u.change for u in diff.usage if u.measure.startswith("cost")] == ["unchanged", "unchanged"]
    assert diff.verdict == "worse"
    assert diff.verdict_line.endswith("; unchanged: pass rate, cost")


def test_a_cost_limit_on_an_unpriced_run_fails_saying_why(store: Store) -> None:
    record(store, "base", [run("a", cost=None), run("b", cost=0.001)])
    record(store, "head", [run("a", cost=0.001), run("b", cost=0.001)])
    assert store.diff("base", "head").usage == []
    diff = store.diff("base", "head", DiffOptions(max_cost_increase=0.1))
    assert diff.reasons == [
        "--max-cost-increase 10%: cost not compared: 1 shared case(s) called a model with no price (set pricing=)"
    ]


def test_a_latency_limit_without_measured_turns_fails_saying_why(store: Store) -> None:
    record(store, "base", [run("a", cost=0.001)])
    record(store, "head", [run("a", cost=0.001)])
    diff = store.diff("base", "head", DiffOptions(max_latency_increase=0.2))
    assert diff.reasons == ["--max-latency-increase 20%: no turn latency measured on both sides of any shared case"]


def test_skipped_runs_cost_nothing_and_count_for_nothing(store: Store) -> None:
    record(store, "base", [run("a", cost=0.001), run("b", cost=0.001)])
    record(store, "head", [run("a", cost=0.003), run("b", cost=None, outcome="skipped")])
    (per_run, per_pass) = store.diff("base", "head").usage
    assert (per_run.cases, per_run.base, per_run.head) == pytest.approx((1, 0.001, 0.003))
    assert per_pass.measure == "cost per passed run"


def test_a_cost_limit_on_an_agent_that_spent_nothing_passes(store: Store) -> None:
    record(store, "base", [run("a", cost=0.0)])
    record(store, "head", [run("a", cost=0.0)])
    diff = store.diff("base", "head", DiffOptions(max_cost_increase=0.1))
    assert (diff.usage, diff.reasons) == ([], [])
    assert "cost not compared: the agent spent nothing on either side" in diff.usage_notes


def test_with_one_shared_eval_the_gate_weighs_the_measured_increase(store: Store) -> None:
    record(store, "base", [run("a", cost=0.001)])
    record(store, "head", [run("a", cost=0.0013)])
    (per_run, _) = store.diff("base", "head").usage
    assert (per_run.low, per_run.note, per_run.change) == (None, "1 shared case: no spread to measure", "noise")
    assert store.diff("base", "head", DiffOptions(max_cost_increase=0.5)).reasons == []
    assert store.diff("base", "head", DiffOptions(max_cost_increase=0.2)).reasons == [
        "cost per eval run rose +30% (1 shared case: no spread to measure), more than --max-cost-increase 20% as "
        "measured (there is no interval)"
    ]


def test_a_store_from_before_the_latency_column_is_upgraded_with_each_replys_latency(store_url: str) -> None:
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import inspect, select

    from niceeval.store._open import _MIGRATIONS
    from niceeval.store._schema import events

    with Store.open(store_url) as store:
        record(store, "base", [run(f"e{i}", cost=0.001, turns=(1.0, 1.0 + i / 10)) for i in range(8)])
        record(store, "head", [run(f"e{i}", cost=0.001, turns=(2.0, 2.0 + i / 5)) for i in range(8)])
        record(store, "untimed", [run(f"e{i}", cost=0.001) for i in range(8)])
        expected = store.diff("base", "head", DiffOptions(threshold=0.2)).usage
        with store.engine.begin() as conn:  # back to schema 0018, as an older niceeval left it
            config = Config()
            config.set_main_option("script_location", str(_MIGRATIONS))
            config.attributes["connection"] = conn
            command.downgrade(config, "0018_cmp")
        assert "latency" not in {c["name"] for c in inspect(store.engine).get_columns("events")}
    with Store.open(store_url) as store:
        with store.engine.connect() as conn:
            timed = conn.execute(select(events.c.latency).where(events.c.latency.is_not(None))).scalars().all()
        assert len(timed) == 32 and sorted(timed)[:3] == [1.0, 1.0, 1.0]
        assert store.diff("base", "head", DiffOptions(threshold=0.2)).usage == expected
        assert [u.measure for u in store.diff("base", "untimed").usage] == ["cost per eval run", "cost per passed run"]
