"""A suite's figures folded eval by eval (`SuiteTotals`) are the figures taken over every tally at once.

The suite keeps no tally per eval: each is folded when its last run is reported, in the order evals finish.
Here seeded suites of mixed outcomes are folded in a shuffled order and compared with the figures `render` takes
from the whole list (what every report showed before): counts, runs, spend, pass rate and its interval, power,
mean points, the rate over cases of `--min-suite-pass-rate`.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from niceeval._core.results import RunResult, Spend
from niceeval._core.suite_totals import SuiteTotals
from niceeval._core.summary import EvalTally, PlannedEval, SuiteSummary
from niceeval.render import (
    folded_case_rate,
    folded_points,
    folded_points_text,
    folded_power,
    folded_rate,
    suite_points,
    suite_points_text,
    suite_power,
    suite_rate,
)
from niceeval.stats import Estimate, clustered_rate

GATES = {"strict": False, "min_pass_rate": 0.6, "min_pass_at_k": None}
OUTCOMES = ("passed", "scored", "failed", "skipped")


def seeded_tallies(seed: int, *, cases: int = 120, runs: int = 3, variants: int = 1) -> list[EvalTally]:
    """`cases` cases (each with `variants` variants sharing its cluster, every fifth case under a coarser
    `cluster=` key), `runs` runs each of mixed outcomes (every eleventh case skipped), some cut short, some
    infra failures, inconclusive assertions and score evals."""
    chance = random.Random(seed)
    tallies = []
    for case in range(cases):
        cluster = f"doc={case // 4}" if case % 5 == 0 else (f"qa[c{case}]" if variants > 1 else None)
        for variant in range(variants):
            eval_id = f"qa[c{case}]" + (f"[v{variant}]" if variants > 1 else "")
            planned = PlannedEval(id=eval_id, file="evals/qa.py", line=3, runs=runs, cluster=cluster)
            tally = EvalTally(eval=planned)
            scored = case % 3 == 0
            for index in range(chance.choice([runs, runs, runs, 0, 1])):
                outcome = "skipped" if case % 11 == 0 else chance.choices(OUTCOMES, weights=(6, 2, 2, 1))[0]
                infra = outcome == "failed" and chance.random() < 0.2
                tally.count_run(outcome, "infra" if infra else None, run_index=index)
                if scored and outcome != "skipped":
                    tally.add_points(chance.choice([0.0, 1.0, 2.0, 3.0]), 3.0)
            tally.inconclusive = chance.choice([0, 0, 1])
            tally.total_duration_s = chance.random()
            tallies.append(tally)
    return tallies


def folded(tallies: list[EvalTally], seed: int) -> SuiteTotals:
    """The tallies folded as a suite would: the shared clusters counted at planning, then in a shuffled order."""
    totals = SuiteTotals(
        **GATES,  # type: ignore[arg-type]
        planned=len(tallies),
        shared=Counter(t.eval.cluster for t in tallies if t.eval.cluster not in (None, t.eval.id)),
    )
    order = list(tallies)
    random.Random(seed).shuffle(order)
    for tally in order:
        totals.add(tally)
    totals.close()
    return totals


def same(folded_estimate: Estimate, whole: Estimate) -> None:
    assert (folded_estimate.n, folded_estimate.clusters, folded_estimate.note) == (whole.n, whole.clusters, whole.note)
    for name in ("value", "low", "high", "stderr"):
        got, want = getattr(folded_estimate, name), getattr(whole, name)
        assert (got is None) == (want is None), name
        if want is not None:
            assert got == pytest.approx(want, rel=1e-9, abs=1e-12), name


@pytest.mark.parametrize(("seed", "runs", "variants"), [(1, 1, 1), (2, 3, 1), (3, 3, 2), (4, 5, 3), (5, 1, 2)])
def test_folded_figures_are_the_figures_over_every_tally(seed: int, runs: int, variants: int) -> None:
    tallies = seeded_tallies(seed, runs=runs, variants=variants)
    totals = folded(tallies, seed)
    whole = SuiteSummary.of(tallies, problems=[], duration_s=1.0, **GATES)  # type: ignore[arg-type]

    same(folded_rate(totals), suite_rate(tallies, strict=False))
    same(folded_points(totals), suite_points(tallies))
    assert folded_points_text(totals) == suite_points_text(tallies)
    by_tally, by_fold = suite_power(tallies, strict=False), folded_power(totals)
    assert (by_fold.cases, by_fold.runs) == (by_tally.cases, by_tally.runs)
    assert by_fold.detectable_drop == pytest.approx(by_tally.detectable_drop, rel=1e-9)
    assert by_fold.run_to_run_variance == pytest.approx(by_tally.run_to_run_variance, rel=1e-9)

    verdicts = {t.eval.id: whole.status_of(t) for t in tallies if t.done}
    expected_counts = dict.fromkeys(OUTCOMES, 0) | Counter(verdicts.values())
    assert totals.verdicts == expected_counts
    assert totals.verdicts["failed"] > 0 and totals.verdicts["scored"] > 0 and totals.verdicts["skipped"] > 0
    assert totals.runs_done == sum(t.done for t in tallies)
    assert totals.infra == sum(t.infra for t in tallies) > 0
    assert totals.inconclusive == sum(t.inconclusive for t in tallies) > 0
    counted = [t for t in tallies if verdicts.get(t.eval.id, "skipped") != "skipped" and t.counted]
    cases = clustered_rate(
        [(int(verdicts[t.eval.id] != "failed"), 1) for t in counted], [t.eval.cluster or t.eval.id for t in counted]
    )
    same(folded_case_rate(totals), cases)
    assert totals.shared == Counter()  # every shared cluster was released


def test_a_summary_built_from_every_tally_folds_them_and_keeps_them_for_the_reporters() -> None:
    tallies = seeded_tallies(7, runs=3, variants=2)
    summary = SuiteSummary.of(tallies, problems=[], duration_s=1.0, **GATES)  # type: ignore[arg-type]
    assert summary.evals == len(tallies) and summary.unfinished == tallies
    same(folded_rate(summary.totals), suite_rate(tallies, strict=False))
    assert summary.exit_code == 1  # some eval failed


def test_a_shared_cluster_is_held_until_its_last_eval_and_then_folded() -> None:
    plan = [PlannedEval(id=f"qa[c1][v{i}]", file="f.py", line=1, cluster="qa[c1]") for i in range(3)]
    totals = SuiteTotals(**GATES, planned=3, shared=Counter({"qa[c1]": 3}))  # type: ignore[arg-type]
    for planned in plan[:2]:
        tally = EvalTally(eval=planned)
        tally.count_run("passed")
        totals.add(tally)
    assert totals.rates.clusters == 0 and totals.rates.items == 2  # held open: one variant still runs
    last = EvalTally(eval=plan[2])
    last.count_run("failed")
    totals.add(last)
    assert (totals.rates.clusters, totals.rates.items, totals.shared) == (1, 3, Counter())
    assert folded_rate(totals).value == pytest.approx(2 / 3)


def test_a_cluster_cut_short_is_folded_when_the_suite_closes() -> None:
    totals = SuiteTotals(**GATES, planned=2, shared=Counter({"doc=1": 2}))  # type: ignore[arg-type]
    tally = EvalTally(eval=PlannedEval(id="a", file="f.py", line=1, cluster="doc=1"))
    tally.count_run("passed")
    totals.add(tally)
    assert totals.rates.clusters == 0
    totals.close()
    assert (totals.rates.clusters, folded_rate(totals).note) == (1, "1 case: no spread to measure")


def test_spend_is_summed_over_the_folded_evals() -> None:
    totals = SuiteTotals(**GATES, planned=2)  # type: ignore[arg-type]
    for cost in (0.25, 0.5):
        tally = EvalTally(eval=PlannedEval(id=f"e{cost}", file="f.py", line=1))
        spend = Spend(calls=1, tokens=10, input_tokens=6, output_tokens=4, cost=cost)
        tally.add(
            RunResult.model_validate(
                {
                    "eval_id": tally.eval.id,
                    "file": "f.py",
                    "line": 1,
                    "outcome": "passed",
                    "duration_s": 0.1,
                    "agent_spend": spend,
                }
            )
        )
        totals.add(tally)
    assert totals.agent_spend == Spend(calls=2, tokens=20, input_tokens=12, output_tokens=8, cost=0.75)
    assert totals.judge_spend == Spend()


def test_an_empty_suite_has_no_figures() -> None:
    totals = SuiteTotals(**GATES)  # type: ignore[arg-type]
    totals.close()
    assert folded_rate(totals).note == "no runs"
    assert folded_points(totals).note == "no score evals"
    assert folded_power(totals).note == "no cases"
    assert not totals.failed and totals.runs_per_case() == 1


def test_spend_sums_are_what_adding_the_spends_gives() -> None:
    """The suite's and an eval's sums keep plain numbers, not a `Spend` per addition: the same figures as
    `Spend.__add__` from `Spend()` (an unknown cost stays unknown, each unpriced model named once, in order)."""
    spends = [
        Spend(calls=1, tokens=7, input_tokens=3, output_tokens=4, cost=0.1),
        Spend(calls=2, tokens=5, cache_read_tokens=5, cost=0.2, unpriced=["m2", "m1"]),
        Spend(calls=1, tokens=1, output_tokens=1, cost=None, unpriced=["m1", "m3"]),
        Spend(calls=1, tokens=2, input_tokens=2, cost=0.3),
    ]
    judged = [Spend(cached=2, cost=0.0), Spend(calls=1, tokens=9, cost=0.05)]
    totals = SuiteTotals(**GATES, planned=3)  # type: ignore[arg-type]
    for n, (agent, judge) in enumerate([(spends[:2], judged), (spends[2:3], []), (spends[3:], [])]):
        tally = EvalTally(eval=PlannedEval(id=f"e{n}", file="f.py", line=1, runs=2))
        for index, (one, other) in enumerate(zip(agent, [*judge, Spend(), Spend()], strict=False)):
            run = {"eval_id": tally.eval.id, "file": "f.py", "line": 1, "outcome": "passed", "duration_s": 0.1}
            tally.add(RunResult.model_validate({**run, "run_index": index, "agent_spend": one, "judge_spend": other}))
        totals.add(tally)
    added = Spend()
    for spend in spends:
        added = added + spend
    assert totals.agent_spend == added
    assert totals.agent_spend.cost is None and totals.agent_spend.unpriced == ["m2", "m1", "m3"]
    assert totals.judge_spend == Spend() + judged[0] + judged[1]
    assert (totals.judge_spend.calls, totals.judge_spend.cached) == (1, 2)
