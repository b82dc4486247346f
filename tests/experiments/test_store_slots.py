"""The store's side of experiments: suite runs tagged with their experiment, carried slots read by reference."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from niceeval._core.results import Spend
from niceeval.store import Store, SuiteRunStart
from niceeval.store._recorder import SuiteEnd
from tests.store.test_store import full_result, planned, recording, result


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url) as opened:
        yield opened


def _suite(store: Store, run_id: str, experiment: str | None, runs: list, plan_runs: int = 1) -> None:
    ids = list(dict.fromkeys(r.eval_id for r in runs))
    with recording(store) as recorder:
        start = SuiteRunStart(id=run_id, command=["niceeval", "exp"], experiment=experiment)
        recorder.begin(start, planned(*ids, runs=plan_runs))
        recorder.add(run_id, runs)
        recorder.finish(run_id, SuiteEnd(status="finished", exit_code=0, duration_s=1.0))


def test_suite_runs_are_listed_by_experiment(store: Store) -> None:
    _suite(store, "r1", "gpt", [result("e")])
    _suite(store, "r2", "claude", [result("e")])
    _suite(store, "r3", None, [result("e")])
    _suite(store, "r4", "gpt", [result("e")])
    assert [r.id for r in store.runs(experiment="gpt")] == ["r4", "r1"]
    assert [r.experiment for r in store.runs()] == ["gpt", None, "claude", "gpt"]
    assert store.runs(experiment="nobody") == []


def test_a_carried_slot_reads_back_as_the_run_it_points_to_and_costs_this_run_nothing(store: Store) -> None:
    executed = full_result().model_copy(
        update={"identity": "abc", "run_index": 0, "agent_spend": Spend(calls=1, tokens=70, cost=0.25)}
    )
    _suite(store, "first", "gpt", [executed])
    carried = executed.model_copy(
        update={"run_index": 0, "provenance": "carried", "carried_from": "first", "carried_index": 0,
                "assertions": [], "events": []}
    )  # fmt: skip
    fresh = executed.model_copy(update={"run_index": 1, "agent_spend": Spend(calls=1, tokens=70, cost=0.5)})
    _suite(store, "second", "gpt", [carried, fresh], plan_runs=2)

    loaded = list(store.results("second"))
    assert [(r.run_index, r.provenance, r.carried_from, r.carried_index) for r in loaded] == [
        (0, "carried", "first", 0),
        (1, "executed", None, None),
    ]
    assert loaded[0].assertions == executed.assertions  # the full record, read from the run it points to
    assert loaded[0].events == executed.events
    detail = store.run("second")
    assert [(s.run_index, s.provenance, s.carried_from) for s in detail.eval_runs] == [
        (0, "carried", "first"),
        (1, "executed", None),
    ]
    assert detail.run.runs_done == 2
    assert detail.run.agent_cost == pytest.approx(0.5)  # what this suite run paid: the carried slot was paid before
    assert store.eval_run("second", executed.eval_id, 0).provenance == "carried"
