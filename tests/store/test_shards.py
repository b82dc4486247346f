"""Suite runs written by shards (`--run-id`): create-or-join, refusals, and the last shard closing the suite run."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from niceeval._core.outcome import Outcome
from niceeval.store import Store, StoreError, SuiteRunStart
from niceeval.store._recorder import ShardJoin, SuiteEnd

from .test_store import planned, recording, result

PLAN = planned("a.py::e0", "a.py::e1", "a.py::e2")


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url) as opened:
        yield opened


def join_as(store: Store, shard: int, count: int = 3, *, digest: str = "plan-1", run_id: str = "gh-1") -> ShardJoin:
    with recording(store) as recorder:
        return recorder.join_shard(SuiteRunStart(id=run_id), PLAN, shard=shard, count=count, digest=digest)


def join(store: Store, shard: int, count: int = 3, *, digest: str = "plan-1", run_id: str = "gh-1") -> int:
    return join_as(store, shard, count, digest=digest, run_id=run_id).attempt


def finish(store: Store, shard: int, *, duration_s: float = 1.0, errors: list[dict[str, str]] | None = None) -> None:
    end_as(store, shard, SuiteEnd(status="finished", exit_code=0, duration_s=duration_s, errors=tuple(errors or ())))


def end_as(store: Store, shard: int, end: SuiteEnd) -> None:
    with recording(store) as recorder:
        recorder.finish_shard("gh-1", shard, end)


def test_the_first_shard_creates_the_suite_run_with_the_whole_plan(store: Store) -> None:
    joined = join_as(store, 2)
    assert (joined.created, joined.attempt) == (True, 1)
    info = store.run("gh-1").run
    assert (info.status, info.shard_count, info.shards_done, info.evals) == ("running", 3, 0, 3)
    assert [s.shard for s in store.shards("gh-1")] == [2]


def test_the_other_shards_join_it(store: Store) -> None:
    join(store, 1)
    joined = join_as(store, 3)
    assert (joined.created, joined.attempt) == (False, 1)
    assert [(s.shard, s.status) for s in store.shards("gh-1")] == [(1, "running"), (3, "running")]
    assert len(store.runs()) == 1


def test_the_suite_run_finishes_when_its_last_shard_does(store: Store) -> None:
    outcomes: list[Outcome] = ["passed", "failed", "passed"]
    for shard in (1, 2, 3):
        join(store, shard)
        with recording(store) as recorder:
            recorder.add("gh-1", [result(f"a.py::e{shard - 1}", outcomes[shard - 1])])
    finish(store, 3, duration_s=4.0)
    finish(store, 1, duration_s=2.0)
    info = store.run("gh-1").run
    assert (info.status, info.shards_done, info.runs_done) == ("running", 2, 3)
    finish(store, 2, duration_s=3.0)
    info = store.run("gh-1").run
    assert (info.status, info.shards_done, info.exit_code) == ("finished", 3, 1)
    assert (info.passed, info.failed, info.runs_done, info.runs_planned) == (2, 1, 3, 3)
    assert info.duration_s == 4.0  # the longest shard: they run side by side


def test_load_errors_repeated_by_every_shard_are_kept_once_and_make_exit_2(store: Store) -> None:
    error = {"location": "evals/bad.py:3", "message": "SyntaxError: invalid syntax"}
    for shard in (1, 2, 3):
        join(store, shard)
        finish(store, shard, errors=[error])
    info = store.run("gh-1").run
    assert (info.errors, info.exit_code) == ([error], 2)


def test_a_shard_that_finished_is_refused(store: Store) -> None:
    join(store, 1)
    finish(store, 1)
    with pytest.raises(StoreError, match=r"shard 1/3 of suite run gh-1 already finished.*niceeval report gh-1"):
        join(store, 1)


def test_a_shard_that_did_not_finish_joins_again_as_its_next_attempt(store: Store) -> None:
    join(store, 1)
    end_as(store, 1, SuiteEnd(status="interrupted", exit_code=130, duration_s=1.0))
    assert join(store, 1) == 2
    assert join(store, 1) == 3  # killed again without a word: still running, still allowed
    shard = store.shards("gh-1")[0]
    assert (shard.status, shard.attempts, shard.duration_s) == ("running", 3, 1.0)


def test_a_shard_with_another_count_is_refused(store: Store) -> None:
    join(store, 1)
    with pytest.raises(StoreError, match=r"split into 3 shards, and this run says --shard 2/4.*--shard I/3"):
        join(store, 2, count=4)


def test_a_shard_that_plans_other_eval_runs_is_refused(store: Store) -> None:
    join(store, 1)
    with pytest.raises(StoreError, match=r"shard 2/3 plans other eval runs than suite run gh-1"):
        join(store, 2, digest="plan-2")


def test_a_suite_run_made_without_run_id_cannot_be_joined(store: Store) -> None:
    with recording(store) as recorder:
        recorder.begin(SuiteRunStart(id="gh-1"), PLAN)
    with pytest.raises(StoreError, match=r"was not started with --run-id.*--resume gh-1"):
        join(store, 1)


def test_shards_starting_at_the_same_moment_make_one_suite_run(store_url: str) -> None:
    errors: list[BaseException] = []
    gate = threading.Barrier(3, timeout=60)

    def start(shard: int) -> None:
        try:
            with Store.open(store_url) as own:  # each shard its own engine, as separate processes have
                gate.wait()
                join(own, shard)
        except BaseException as exc:
            gate.abort()  # the others stop waiting: the failure is reported, not a hang
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(shard,)) for shard in (1, 2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with Store.open(store_url) as store:
        assert [r.id for r in store.runs()] == ["gh-1"]
        assert [s.shard for s in store.shards("gh-1")] == [1, 2, 3]
        assert len(store.planned("gh-1")) == 3


def test_shards_finishing_at_the_same_moment_close_the_suite_run(store_url: str) -> None:
    with Store.open(store_url) as store:
        for shard in (1, 2, 3):
            join(store, shard)
    gate = threading.Barrier(3, timeout=60)
    errors: list[BaseException] = []

    def end(shard: int) -> None:
        try:
            with Store.open(store_url) as own:
                gate.wait()
                finish(own, shard)
        except BaseException as exc:
            gate.abort()
            errors.append(exc)

    threads = [threading.Thread(target=end, args=(shard,)) for shard in (1, 2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with Store.open(store_url) as store:
        info = store.run("gh-1").run
        assert (info.status, info.shards_done) == ("finished", 3)


def test_the_detail_names_the_missing_shards(store: Store) -> None:
    join(store, 1)
    join(store, 2)
    finish(store, 1)
    detail = store.run("gh-1")
    assert detail.run.shards_pending
    assert detail.missing_shards == ["2 (running)", "3 (not started)"]
