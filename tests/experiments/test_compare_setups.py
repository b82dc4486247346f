"""`Store.compare`: setups recorded through the Recorder (SQLite and PostgreSQL), each measured with its
intervals, each pair on its shared cases with `diff`'s paired tests, and the Pareto front claimed only beyond
noise."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _setups import Case, once, record, result

from niceeval._core.errors import ConfigError
from niceeval._core.summary import PlannedEval
from niceeval.store import CompareOptions, DiffOptions, RunNotFound, SetupComparison, Store, SuiteRunStart
from niceeval.store._recorder import Recorder, SuiteEnd


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url) as opened:
        yield opened


def cheap_and_quick(store: Store, run_id: str = "a", **how: Any) -> None:
    """12 evals that all pass, about $0.001 a run, a turn of about 1s."""
    once(
        store,
        run_id,
        [Case(cost=0.001 + i * 1e-5, turns=(1.0 + i / 100,), score=0.5 + i / 30) for i in range(12)],
        **how,
    )


def dear_and_slow(store: Store, run_id: str = "b", **how: Any) -> None:
    """The same 12 evals all failing, at about twice the cost and twice the latency."""
    once(store, run_id, [Case(outcome="failed", cost=0.002 + i * 1e-5, turns=(2.0 + i / 100,), score=0.2 + i / 30)
                         for i in range(12)], **how)  # fmt: skip


def dearer_and_quicker(store: Store, run_id: str = "c", **how: Any) -> None:
    """All 12 pass, three times the cost of `a`, half its latency."""
    once(store, run_id, [Case(cost=0.003 + i * 1e-5, turns=(0.5 + i / 100,)) for i in range(12)], **how)


def cheaper_but_two_fail(store: Store, run_id: str = "d") -> None:
    """Half the cost of `a`, its latency, but 2 of the 12 fail."""
    once(store, run_id, [Case(outcome="failed" if i < 2 else "passed", cost=0.0005 + i * 1e-5, turns=(1.0 + i / 100,))
                         for i in range(12)])  # fmt: skip


def pair(comparison: SetupComparison, first: str, second: str) -> tuple[str, str]:
    found = next(p for p in comparison.pairs if (p.first, p.second) == (first, second))
    return found.relation, found.relation_line


def test_each_setup_is_measured_with_its_95_percent_intervals(store: Store) -> None:
    cheap_and_quick(store)
    dear_and_slow(store)
    a, b = store.compare(["a", "b"]).setups
    assert (a.name, a.suite_run_id, a.cases, a.runs) == ("a", "a", 12, 12)
    # 12 of 12: Wilson's interval, 0.76-1.00, not "100%"
    assert (a.pass_rate.value, a.pass_rate.low, a.pass_rate.high) == pytest.approx((1.0, 0.757506, 1.0), abs=1e-6)
    assert a.pass_rate.shown == "100% (95% CI 76%-100%)"
    assert (b.pass_rate.value, b.pass_rate.high) == pytest.approx((0.0, 0.242494), abs=1e-6)
    similarity = a.mean_scores["similarity"]
    assert (similarity.value, similarity.low, similarity.high) == pytest.approx(
        (0.683333, 0.606971, 0.759695), abs=1e-6
    )
    assert a.cost_per_run is not None and a.cost_per_pass is not None
    assert (a.cost_per_run.value, a.cost_per_run.low, a.cost_per_run.high) == pytest.approx(
        (0.001055, 0.0010325, 0.0010775), abs=1e-9
    )
    assert a.cost_per_run.shown == "$0.0011 (95% CI $0.0010-$0.0011)"
    assert a.cost_per_pass.value == pytest.approx(0.001055)
    assert a.latency_p50 is not None and a.latency_p95 is not None
    # 12 turns, 1.00s to 1.11s: p50 between the 6th and 7th, p95 at rank 11 * 0.95 = 10.45
    assert (a.latency_p50.value, a.latency_p50.low, a.latency_p50.high) == pytest.approx((1.055, 1.025, 1.09))
    assert a.latency_p95.value == pytest.approx(1.1045)
    assert b.cost_per_pass is None
    assert b.notes == ["cost per passed run not estimated: no run passed"]


def test_a_pair_is_weighed_on_its_shared_cases_with_the_paired_tests_of_diff(store: Store) -> None:
    cheap_and_quick(store)
    dear_and_slow(store)
    (found,) = store.compare(["a", "b"]).pairs
    assert (found.first, found.second, found.shared_cases) == ("a", "b", 12)
    assert found.suite is not None
    # 12 flips one way: McNemar's exact p = 2 * 0.5 ** 12
    assert (found.suite.test, found.suite.difference, found.suite.p_value) == ("mcnemar", -1.0, pytest.approx(2 / 4096))
    (score,) = found.mean_scores
    assert (score.assertion, score.difference, score.change) == ("similarity", pytest.approx(-0.3), "regression")
    usage = {u.measure: u for u in found.usage}
    assert usage["cost per eval run"].evidence == "+95% (95% CI +93% to +97%)"
    assert usage["p50 latency"].change == "worse"
    assert found.verdict_line.startswith("worse on pass rate (-100 pts, 95% CI -100 to -66 pts)")


def test_a_setup_beaten_on_quality_cost_and_latency_at_once_leaves_the_front(store: Store) -> None:
    cheap_and_quick(store)
    dear_and_slow(store)
    dearer_and_quicker(store)
    comparison = store.compare(["a", "b", "c"])
    assert comparison.front == ["a", "c"]
    assert [s.on_front for s in comparison.setups] == [True, False, True]
    assert pair(comparison, "a", "b") == (
        "first dominates",
        "a dominates b: b worse on pass rate (-100 pts, 95% CI -100 to -66 pts, mcnemar p=0.000488), cost (+95%, "
        "95% CI +93% to +97%), p50 latency (+95%, 95% CI +92% to +98%)",
    )
    assert pair(comparison, "a", "c") == (
        "a trade-off",
        "a trade-off: c better on p50 latency (-47%, 95% CI -49% to -46%); worse on cost (+190%, 95% CI +186% to "
        "+194%); unchanged: pass rate",
    )
    assert pair(comparison, "b", "c")[0] == "a trade-off"


def test_a_pair_with_a_measure_within_noise_is_not_separable(store: Store) -> None:
    cheap_and_quick(store)
    cheaper_but_two_fail(store)
    comparison = store.compare(["a", "d"])
    assert comparison.front == ["a", "d"]
    assert pair(comparison, "a", "d") == (
        "not separable",
        "not separable: d better on cost (-47%, 95% CI -48% to -46%); within noise: pass rate (-17 pts, 95% CI -45 "
        "to +10 pts, mcnemar p=0.5); unchanged: p50 latency",
    )


def test_ahead_on_every_point_estimate_is_no_claim_without_the_intervals(store: Store) -> None:
    once(store, "x", [Case(outcome="failed" if i < 3 else "passed", cost=0.002 + i * 1e-5, turns=(2.0 + i / 100,))
                      for i in range(12)])  # fmt: skip
    once(store, "y", [Case(outcome="failed" if i < 2 else "passed", cost=0.001 + i * 1e-5, turns=(1.0 + i / 100,))
                      for i in range(12)])  # fmt: skip
    comparison = store.compare(["x", "y"])
    assert comparison.front == ["x", "y"]
    relation, line = pair(comparison, "x", "y")
    assert relation == "not separable"
    assert line.endswith("(y is ahead on every measure by its point estimate, not beyond noise)")
    assert "within noise: pass rate (+8 pts" in line


def test_a_pass_rate_interval_clear_of_zero_is_no_claim_while_its_test_does_not_reject(store: Store) -> None:
    once(store, "old", [Case(outcome="failed" if i < 8 else "passed", cost=0.002, turns=(2.0 + i / 100,))
                        for i in range(12)])  # fmt: skip
    once(store, "new", [Case(outcome="failed" if i < 3 else "passed", cost=0.001, turns=(1.0 + i / 100,))
                        for i in range(12)])  # fmt: skip
    comparison = store.compare(["old", "new"])
    (found,) = comparison.pairs
    assert found.suite is not None and found.suite.low is not None and found.suite.low > 0  # the interval clears 0
    assert found.suite.p_value == pytest.approx(0.0625)  # 5 flips, all one way: McNemar cannot reject
    assert found.relation == "not separable"
    assert "within noise: pass rate (+42 pts, 95% CI +6 to +64 pts, mcnemar p=0.0625)" in found.relation_line
    assert comparison.front == ["old", "new"]


def test_three_shared_cases_are_too_few_to_claim_a_dominance(store: Store) -> None:
    once(store, "old", [Case(outcome="failed", cost=0.002, turns=(2.0 + i / 10,)) for i in range(3)])
    once(store, "new", [Case(cost=0.001, turns=(1.0 + i / 10,)) for i in range(3)])
    comparison = store.compare(["old", "new"])
    (found,) = comparison.pairs
    assert found.suite is not None and found.suite.note == "3 shared cases: not enough to tell"
    assert found.relation == "not separable"
    assert found.relation_line == (
        "not separable: new better on cost (-50%, 95% CI -50% to -50%), p50 latency (-48%, 95% CI -50% to -45%); "
        "within noise: pass rate (+100 pts, 95% CI +21 to +100 pts, 3 shared cases: not enough to tell) (new is "
        "ahead on every measure by its point estimate, not beyond noise)"
    )
    assert comparison.front == ["old", "new"]


def test_only_the_cases_both_setups_ran_are_paired(store: Store) -> None:
    cheap_and_quick(store)
    record(store, "half", {f"e{i}": [Case(cost=0.001)] for i in range(6)} | {"extra": [Case()]})
    comparison = store.compare(["a", "half"])
    assert [s.cases for s in comparison.setups] == [12, 7]
    assert comparison.pairs[0].shared_cases == 6


def test_setups_with_no_case_in_common_are_not_separable(store: Store) -> None:
    cheap_and_quick(store)
    record(store, "other", {"z": [Case()]})
    (found,) = store.compare(["a", "other"]).pairs
    assert (found.shared_cases, found.relation) == (0, "not separable")
    assert found.relation_line == "not separable: no shared case with a counted run"
    assert found.notes == ["runs a and other cannot be compared: the two runs share no eval with a counted run: "
                           "nothing to compare."]  # fmt: skip


def test_a_setup_with_an_unpriced_model_claims_nothing_on_cost(store: Store) -> None:
    cheap_and_quick(store)
    once(store, "unpriced", [Case(cost=None, turns=(0.5,), outcome="passed") for _ in range(12)])
    comparison = store.compare(["a", "unpriced"])
    unpriced = comparison.setups[1]
    assert (unpriced.cost_per_run, unpriced.notes) == (
        None, ["cost not estimated: 12 case(s) called a model with no price (set pricing=)"],
    )  # fmt: skip
    relation, line = pair(comparison, "a", "unpriced")
    assert relation == "not separable"
    assert "within noise: cost (not compared)" in line
    assert comparison.front == ["a", "unpriced"]


def test_every_setup_is_judged_by_the_first_setups_rule_unless_told(store: Store) -> None:
    record(store, "soft", {f"e{i}": [Case(outcome="scored")] for i in range(6)}, strict=True)
    record(store, "hard", {f"e{i}": [Case(outcome="passed")] for i in range(6)})
    judged = store.compare(["soft", "hard"])
    assert (judged.strict, judged.setups[0].pass_rate.value) == (True, 0.0)
    lenient = store.compare(["soft", "hard"], CompareOptions(strict=False))
    assert (lenient.strict, lenient.setups[0].pass_rate.value) == (False, 1.0)


def test_bad_setups_are_refused_saying_what_to_do(store: Store) -> None:
    cheap_and_quick(store, "abcdef")
    with pytest.raises(ConfigError, match="at least two setups"):
        store.compare(["abcdef"])
    with pytest.raises(ConfigError, match="abcdef and abcd both name suite run abcdef; compare each suite run once"):
        store.compare(["abcdef", "abcd"])
    with pytest.raises(RunNotFound):
        store.compare(["abcdef", "nothing"])


def test_an_experiment_is_measured_by_its_latest_finished_suite_run(store: Store) -> None:
    dear_and_slow(store, "mini-old", experiment="mini")
    cheap_and_quick(store, "mini-new", experiment="mini")
    dear_and_slow(store, "mini-cut", experiment="mini", status="interrupted")
    dearer_and_quicker(store, "large-1", experiment="large")
    comparison = store.compare(["mini", "large"])
    assert [(s.name, s.suite_run_id, s.experiment) for s in comparison.setups] == [
        ("mini", "mini-new", "mini"), ("large", "large-1", "large"),
    ]  # fmt: skip
    assert pair(comparison, "mini", "large")[0] == "a trade-off"
    assert [s.name for s in store.compare(["mini", "mini-old"]).setups] == ["mini", "mini-old"]


def test_an_experiment_with_no_finished_suite_run_is_refused(store: Store) -> None:
    cheap_and_quick(store, "a")
    cheap_and_quick(store, "cut", experiment="new", status="interrupted")
    with pytest.raises(ConfigError, match="experiment new has no finished suite run yet \\(its latest, cut, is "
                       "interrupted\\); run it to the end, or name one of its suite runs by id"):  # fmt: skip
        store.compare(["a", "new"])


def test_a_suite_run_that_carried_its_attempts_is_measured_on_the_runs_it_carries(store: Store) -> None:
    cheap_and_quick(store, "executed", experiment="mini")
    carried = [
        result(f"e{i}", Case(cost=0.001 + i * 1e-5, turns=())).model_copy(
            update={"provenance": "carried", "carried_from": "executed", "carried_index": 0, "events": []}
        )
        for i in range(12)
    ]  # a carried slot's row is a summary: no events, no assertions
    plan = [PlannedEval(id=r.eval_id, file="evals/a.py", line=1) for r in carried]
    recorder = Recorder.of(store)
    try:
        recorder.begin(SuiteRunStart(id="carrying", command=["niceeval", "exp"], experiment="mini"), plan)
        recorder.add("carrying", carried)
        recorder.finish("carrying", SuiteEnd(status="finished", exit_code=0, duration_s=1.0))
    finally:
        recorder.close()
    dear_and_slow(store)
    mini, _ = store.compare(["mini", "b"]).setups
    assert mini.suite_run_id == "carrying"
    assert mini.latency_p50 is not None and mini.latency_p50.value == pytest.approx(1.055)
    assert mini.mean_scores["similarity"].value == pytest.approx(0.683333, abs=1e-6)
    assert mini.notes == []


def test_each_pairs_diff_is_kept_and_read_back_as_niceeval_diff_keeps_it(store: Store) -> None:
    cheap_and_quick(store)
    dear_and_slow(store)
    rule = DiffOptions(strict=False, min_pass_rate=1.0, alpha=0.05)
    assert store.kept_diff("a", "b", rule) is None
    first = store.compare(["a", "b"])
    kept = store.kept_diff("a", "b", rule)
    assert kept is not None and kept == store.diff("a", "b", rule)
    assert store.compare(["a", "b"]) == first
