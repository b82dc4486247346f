"""Closing a suite run counts its totals, kept tallies and pass rate in SQL, holding nothing per eval: on seeded
suite runs (mixed outcomes over three runs, `infra` failures, skips, inconclusive judges, attack verdicts, points,
variants, clusters, carried runs, unpriced spend) the stored values are those the Python fold of the same runs
gives (the runner's `EvalTally` per eval, `clustered_rate` over the evals), to the last bit, and those the close
recorded before it was set-based, on SQLite and PostgreSQL."""

from __future__ import annotations

import math
import random
import tracemalloc
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from niceeval._core.assertion import AssertionResult, JudgeCall
from niceeval._core.errors import ErrorInfo
from niceeval._core.results import RunResult, Spend
from niceeval._core.summary import EvalTally, PlannedEval
from niceeval.stats import Estimate, RateSums, clustered_rate, clustered_rate_of_sums
from niceeval.store import Store, SuiteRunStart
from niceeval.store._driver import session_of
from niceeval.store._recorder import Recorder, SuiteEnd
from niceeval.store._tallies import _FOLD, TALLY_COLUMNS, tally_rows
from niceeval.store._verdicts import judged_counts
from niceeval.store.tables import eval_tallies, suite_runs, suite_tallies

TOTALS = ("passed", "scored", "failed", "skipped", "runs_done", "agent_tokens", "judge_tokens", "agent_cost",
          "judge_cost", "evals", "runs_planned")  # fmt: skip


def _assertions(rng: random.Random, outcome: str) -> list[AssertionResult]:
    """A check in the run's state, sometimes a judge (sent, cached, or inconclusive without a key) and sometimes
    an attack's verdict."""
    state = "failed" if outcome in ("failed", "scored") else "passed"
    found = [AssertionResult(name=f"check {rng.randrange(4)}", severity="gate", score=float(state == "passed"),
                             threshold=1.0, state=state, points=1.0)]  # fmt: skip
    kind = rng.randrange(4)
    if kind == 0:
        call = JudgeCall(model=rng.choice(["openai/a", "anthropic/b"]), score=0.8, input_tokens=100,
                         output_tokens=20, cost=rng.choice([0.0004, None]), cached=rng.random() < 0.3)  # fmt: skip
        found.append(AssertionResult(name="judged", severity="soft", score=0.8, threshold=0.7, state="passed",
                                     judge_calls=[call]))  # fmt: skip
    elif kind == 1:
        call = JudgeCall(model="openai/a", asked=False, cause="no_api_key")
        found.append(AssertionResult(name="judged", severity="soft", score=None, threshold=0.7, state="inconclusive",
                                     cause="no_api_key", reason="no API key", judge_calls=[call]))  # fmt: skip
    elif kind == 2:
        found.append(AssertionResult(name="resisted attack", severity="gate", score=float(rng.random() < 0.7),
                                     threshold=1.0, state=rng.choice(["passed", "failed"])))  # fmt: skip
    return found


def _seeded(seed: int, evals: int, *, unpriced: bool) -> tuple[list[PlannedEval], list[RunResult]]:
    """A plan of `evals` evals of three runs each and the runs that finished (some runs of some evals never did)."""
    rng = random.Random(seed)
    plan, runs = [], []
    for n in range(evals):
        eval_id = f"evals/seeded_{n % 4}.py::case_{n:03d}"
        cluster = rng.choice([None, None, "", f"doc-{n % 5}"])
        plan.append(PlannedEval(id=eval_id, file=eval_id.split("::")[0], line=n + 1, runs=3, cluster=cluster,
                                tags=rng.choice([(), ("support",), ("billing", "search")])))  # fmt: skip
        variant = {"prompt": rng.choice(["short", "long"])} if n % 7 == 0 else None
        for index in range(rng.choice([3, 3, 3, 2, 0])):
            outcome = rng.choice(["passed", "passed", "passed", "scored", "failed", "skipped"])
            failure = rng.choice(["agent", "infra", "eval"]) if outcome == "failed" else None
            carried = rng.random() < 0.1
            agent_cost = None if unpriced and rng.random() < 0.05 else rng.choice([0.001, 0.0025])
            runs.append(RunResult(
                eval_id=eval_id, file=eval_id.split("::")[0], line=n + 1, run_index=index, outcome=outcome,
                duration_s=rng.choice([0.1, 0.25, 1.5]), failure=failure,
                error=ErrorInfo(kind="exception", type="KeyError", message="'id'") if failure == "agent" else None,
                assertions=_assertions(rng, outcome) if outcome != "skipped" else [],
                agent_spend=Spend(calls=1, tokens=rng.randrange(50, 90), cost=agent_cost),
                judge_spend=Spend(calls=1, tokens=rng.randrange(100, 200), cost=0.0004),
                points=float(rng.randrange(4)) if n % 3 == 0 else None, points_possible=3.0 if n % 3 == 0 else None,
                variant=variant, provenance="carried" if carried else "executed",
                carried_from="0123456789ab" if carried else None, carried_index=index if carried else None,
            ))  # fmt: skip
    return plan, runs


def _fold(plan: Sequence[PlannedEval], runs: Sequence[RunResult], strict: bool, min_pass_rate: float) -> dict[str, Any]:
    """The totals and pass rate by the runner's own fold: an `EvalTally` per eval, `clustered_rate` over them."""
    found: dict[str, EvalTally] = {}
    for r in runs:
        found.setdefault(r.eval_id, EvalTally(eval=PlannedEval(id=r.eval_id, file="", line=0))).add(r)
    verdicts = [t.status(strict=strict, min_pass_rate=min_pass_rate) for t in found.values()]
    paid = [r for r in runs if r.provenance == "executed"]
    costs = {side: [getattr(r, f"{side}_spend").cost for r in paid] for side in ("agent", "judge")}
    rated = [(found[p.id].passing(strict=strict), found[p.id].counted, p.cluster or p.id) for p in plan
             if p.id in found and found[p.id].counted]  # fmt: skip
    return {
        **{verdict: verdicts.count(verdict) for verdict in ("passed", "scored", "failed", "skipped")},
        "runs_done": len(runs),
        "agent_tokens": sum(r.agent_spend.tokens for r in paid),
        "judge_tokens": sum(r.judge_spend.tokens for r in paid),
        **{f"{side}_cost": None if None in spent else pytest.approx(sum(spent)) for side, spent in costs.items()},  # type: ignore[operator]
        "evals": len(plan),
        "runs_planned": sum(p.runs for p in plan),
        "rate": clustered_rate([(passes, made) for passes, made, _ in rated], [key for _, _, key in rated]),
    }


def _close(store_url: str, seed: int, *, strict: bool, min_pass_rate: float, unpriced: bool) -> dict[str, Any]:
    """Record a seeded suite run beside another, close it, and read back what the close stored (and what the
    viewer's Python fold of its eval runs gives)."""
    plan, runs = _seeded(seed, 60, unpriced=unpriced)
    other_plan, other_runs = _seeded(seed + 1, 20, unpriced=False)
    with Store.open(store_url) as store:
        recorder = Recorder.of(store)
        other = SuiteRunStart(id=uuid.uuid4().hex[:12], command=["niceeval", "run"])
        recorder.begin(other, other_plan)
        recorder.add(other.id, other_runs)  # left running: the close counts its own rows alone
        start = SuiteRunStart(id=uuid.uuid4().hex[:12], command=["niceeval", "run"], strict=strict,
                              min_pass_rate=min_pass_rate)  # fmt: skip
        recorder.begin(start, plan)
        recorder.add(start.id, runs)
        recorder.finish(start.id, SuiteEnd(status="finished", exit_code=1, duration_s=2.0))
        recorder.close()
        with store.engine.begin() as conn:
            folded, rate = tally_rows(session_of(conn), start.id)
        with store.engine.connect() as conn:
            stored = conn.execute(select(suite_runs).where(suite_runs.c.id == start.id)).mappings().one()
            kept = conn.execute(
                select(*(eval_tallies.c[c] for c in TALLY_COLUMNS[1:]))
                .where(eval_tallies.c.suite_run_id == start.id)
                .order_by(eval_tallies.c.position)
            ).all()
            suite = conn.execute(select(suite_tallies).where(suite_tallies.c.suite_run_id == start.id)).mappings().one()
    return {"plan": plan, "runs": runs, "stored": stored, "kept": kept, "suite": suite, "folded": folded, "rate": rate}


CASES = [(45, False, 1.0, False), (46, True, 0.5, True), (47, False, 0.6, False)]


@pytest.mark.parametrize(("seed", "strict", "min_pass_rate", "unpriced"), CASES)
def test_the_close_stores_what_the_python_fold_of_its_runs_gives(
    store_url: str, seed: int, strict: bool, min_pass_rate: float, unpriced: bool
) -> None:
    closed = _close(store_url, seed, strict=strict, min_pass_rate=min_pass_rate, unpriced=unpriced)
    expected = _fold(closed["plan"], closed["runs"], strict, min_pass_rate)
    stored, suite, rate = closed["stored"], closed["suite"], expected.pop("rate")
    assert {name: stored[name] for name in TOTALS} == expected
    assert (unpriced, stored["judge_cost"] is None) == (stored["agent_cost"] is None, False)
    assert (suite["pass_rate"], suite["low"], suite["high"]) == (rate.value, rate.low, rate.high)  # to the bit
    assert closed["rate"] == rate  # the viewer's fold of a running run agrees
    folded = closed["folded"]
    assert [row[:13] + row[15:] for row in closed["kept"]] == [
        (r.eval_id, r.position, r.file, r.line, r.tags, r.runs, r.passed, r.scored, r.failed, r.skipped, r.passing,
         r.counted, r.pass_rate, r.verdict, r.rank, r.varied)
        for r in folded
    ]  # fmt: skip
    assert suite["varied"] == [r.eval_id for r in folded if r.varied]
    assert {v: sum(r.verdict == v for r in folded) for v in ("passed", "scored", "failed", "skipped")} == {
        v: stored[v] for v in ("passed", "scored", "failed", "skipped")
    }


RECORDED = {
    45: {
        "passed": 17,
        "scored": 17,
        "failed": 15,
        "skipped": 0,
        "runs_done": 135,
        "agent_tokens": 8350,
        "judge_tokens": 18406,
        "agent_cost": "0.21550000000000016",
        "judge_cost": "0.04839999999999993",
        "evals": 60,
        "runs_planned": 180,
        "rate": ("0.8472222222222222", "0.75714615662406", "0.9079502729564446"),
    },
    46: {
        "passed": 19,
        "scored": 18,
        "failed": 10,
        "skipped": 1,
        "runs_done": 135,
        "agent_tokens": 8141,
        "judge_tokens": 18173,
        "agent_cost": None,
        "judge_cost": "0.04839999999999993",
        "evals": 60,
        "runs_planned": 180,
        "rate": ("0.6811594202898551", "0.5826082360743801", "0.7657955144607034"),
    },
    47: {
        "passed": 19,
        "scored": 19,
        "failed": 11,
        "skipped": 0,
        "runs_done": 135,
        "agent_tokens": 8697,
        "judge_tokens": 18502,
        "agent_cost": "0.21500000000000014",
        "judge_cost": "0.04879999999999993",
        "evals": 60,
        "runs_planned": 180,
        "rate": ("0.8333333333333334", "0.7449766968985916", "0.8953766595872024"),
    },
}
"""What the close stored for each seeded suite run before it was set-based (the Python fold of every eval run,
commit ebfb2fb): its totals, and its pass rate and interval (`repr` of each float, to the bit)."""


@pytest.mark.parametrize(("seed", "strict", "min_pass_rate", "unpriced"), CASES)
def test_the_close_stores_what_it_stored_before_it_was_set_based(
    store_url: str, seed: int, strict: bool, min_pass_rate: float, unpriced: bool
) -> None:
    closed = _close(store_url, seed, strict=strict, min_pass_rate=min_pass_rate, unpriced=unpriced)
    stored, suite = closed["stored"], closed["suite"]
    found = {name: stored[name] for name in TOTALS}
    found = {name: repr(value) if isinstance(value, float) else value for name, value in found.items()}
    found["rate"] = tuple(repr(suite[name]) for name in ("pass_rate", "low", "high"))
    assert found == RECORDED[seed]


def test_the_rate_of_sums_is_clustered_rate_to_the_bit_for_any_clustering() -> None:
    rng = random.Random(7)
    for _ in range(200):
        cases = [(rng.randrange(4), rng.choice([0, 1, 3, 3])) for _ in range(rng.randrange(1, 40))]
        cases = [(min(passes, made), made) for passes, made in cases]
        keys = [rng.choice(["a", "b", "c", str(n)]) for n in range(len(cases))]
        groups: dict[str, list[float]] = {}
        inverse_runs = 0.0
        for (passes, made), key in zip(cases, keys, strict=True):
            if made:
                groups.setdefault(key, []).append(passes / made)
                inverse_runs += 1 / made
        rates = [rate for group in groups.values() for rate in group]
        sums = RateSums(count=len(rates), rate_sum=math.fsum(rates), runs=sum(made for _, made in cases),
                        inverse_runs=inverse_runs, clusters=len(groups))  # fmt: skip

        def spread(shrunk: float, groups: dict[str, list[float]] = groups) -> float:
            return math.fsum(math.fsum(rate - shrunk for rate in group) ** 2 for group in groups.values())

        assert clustered_rate_of_sums(sums, spread) == clustered_rate(cases, keys)


def test_no_case_counted_is_no_rate() -> None:
    empty = clustered_rate_of_sums(RateSums(count=0, rate_sum=0.0, runs=0, inverse_runs=0.0, clusters=0), abs)
    assert empty == Estimate(value=None, confidence=0.95, note="no runs") == clustered_rate([(0, 0)])


def test_a_suite_run_closed_with_no_run_stored_counts_none_and_has_no_rate(store_url: str) -> None:
    plan = [PlannedEval(id=f"evals/a.py::case_{n}", file="evals/a.py", line=n, runs=2) for n in range(3)]
    with Store.open(store_url) as store:
        recorder = Recorder.of(store)
        start = SuiteRunStart(id=uuid.uuid4().hex[:12], command=["niceeval", "run"])
        recorder.begin(start, plan)
        recorder.finish(start.id, SuiteEnd(status="interrupted", exit_code=130, duration_s=0.5))
        recorder.close()
        with store.engine.connect() as conn:
            stored = conn.execute(select(suite_runs).where(suite_runs.c.id == start.id)).mappings().one()
            suite = conn.execute(select(suite_tallies).where(suite_tallies.c.suite_run_id == start.id)).mappings().one()
    assert {name: stored[name] for name in TOTALS} == {
        "passed": 0, "scored": 0, "failed": 0, "skipped": 0, "runs_done": 0, "agent_tokens": 0, "judge_tokens": 0,
        "agent_cost": 0.0, "judge_cost": 0.0, "evals": 3, "runs_planned": 6,
    }  # fmt: skip
    assert (suite["pass_rate"], suite["low"], suite["high"], suite["varied"]) == (None, None, None, [])


def _close_peak(store_url: str, evals: int) -> int:
    """The peak of what closing a suite run of `evals` evals (two runs each, one of them failed) allocates."""
    runs = [
        RunResult(eval_id=f"evals/a.py::case_{n}", file="evals/a.py", line=1, run_index=index, duration_s=0.1,
                  outcome="failed" if index and n % 3 == 0 else "passed")
        for n in range(evals)
        for index in range(2)
    ]  # fmt: skip
    plan = [PlannedEval(id=f"evals/a.py::case_{n}", file="evals/a.py", line=1, runs=2) for n in range(evals)]
    with Store.open(store_url) as store:
        recorder = Recorder.of(store)
        start = SuiteRunStart(id=uuid.uuid4().hex[:12], command=["niceeval", "run"], min_pass_rate=0.5)
        recorder.begin(start, plan)
        for first in range(0, len(runs), 4000):
            recorder.add(start.id, runs[first : first + 4000])
        del runs, plan
        tracemalloc.start()
        try:
            recorder.finish(start.id, SuiteEnd(status="finished", exit_code=0, duration_s=1.0))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            recorder.close()
        with store.engine.connect() as conn:
            stored = conn.execute(select(suite_runs).where(suite_runs.c.id == start.id)).mappings().one()
    assert (stored["passed"], stored["scored"], stored["runs_done"]) == (evals * 2 // 3, -(-evals // 3), 2 * evals)
    return peak


@pytest.mark.slow
def test_closing_four_times_the_evals_takes_no_more_memory(store_url: str) -> None:
    small, large = _close_peak(store_url, 5_000), _close_peak(store_url, 20_000)
    assert large < small + 100 * 1024, (small, large)  # a tally per eval was 10 MiB more


def test_sqlite_folds_the_tallies_eval_by_eval_looking_each_verdict_up(tmp_path: Path) -> None:
    """The judged sets are looked up per eval, not looped over outside the evals (which read the plan once per
    set: 3.4x the fold's time at 35 sets)."""
    store_url = f"sqlite:///{tmp_path / 'results.db'}"
    closed = _close(store_url, 45, strict=False, min_pass_rate=1.0, unpriced=False)
    run_id = closed["stored"]["id"]
    with Store.open(store_url) as store, store.engine.begin() as conn:
        session = session_of(conn)
        judged = judged_counts(session, run_id, strict=False, min_pass_rate=1.0)
        rows = ", ".join(f"({', '.join(map(str, found.counts))}, '{found.verdict}', 0)" for found in judged)
        fold = _FOLD.format(columns=", ".join(TALLY_COLUMNS), judged=rows)
        plan = [row[3] for row in session.execute("EXPLAIN QUERY PLAN " + fold, (False, run_id, run_id)).fetchall()]
    loops = [step.split()[1] for step in plan if step.split()[0] in ("SCAN", "SEARCH") and step.split()[1] in "gj"]
    assert len(judged) > 3
    assert loops == ["g", "j"], plan  # the evals outside, their judged sets inside


def _planned_and_added(store: Store, evals: int) -> str:
    """A suite run of `evals` evals (two runs each) recorded and left open: its id."""
    runs = [
        RunResult(eval_id=f"evals/a.py::case_{n}", file="evals/a.py", line=1, run_index=index, duration_s=0.1,
                  outcome="passed")
        for n in range(evals)
        for index in range(2)
    ]  # fmt: skip
    plan = [PlannedEval(id=f"evals/a.py::case_{n}", file="evals/a.py", line=1, runs=2) for n in range(evals)]
    recorder = Recorder.of(store)
    start = SuiteRunStart(id=uuid.uuid4().hex[:12], command=["niceeval", "run"])
    recorder.begin(start, plan)
    recorder.add(start.id, runs)
    recorder.close()
    return start.id


def test_on_postgresql_a_close_folds_a_new_run_by_hash_whatever_the_statistics_say(postgres: object) -> None:
    """Statistics taken before a run existed never hold its id: both sides of a join of its rows to its plan look
    like a row or two, and a nested loop over the unindexed side was quadratic (closing 20,000 evals after an
    `ANALYZE`: 217 s; 3.1 s by hash). The close's folds run with nested loops off, and put them back after."""
    from niceeval.store._kept_sums import _KEEP_EVALS

    with Store.open(postgres.database()) as store:  # type: ignore[attr-defined]
        _planned_and_added(store, 500)
        with store.engine.connect() as conn:
            conn.exec_driver_sql("ANALYZE")
            conn.commit()
        fresh = _planned_and_added(store, 500)
        with store.engine.connect() as conn, conn.begin():
            session = session_of(conn)
            session.hash_joins(True)
            plan = " ".join(row[0] for row in session.execute("EXPLAIN " + _KEEP_EVALS, (fresh,) * 3).fetchall())
            session.hash_joins(False)
            assert conn.exec_driver_sql("SHOW enable_nestloop").scalar_one() == "on"
        assert "Nested Loop" not in plan and "Hash" in plan, plan
