"""Pairing a stored run's judge verdicts with a rescore's, and weighing them (`niceeval judge compare`)."""

from __future__ import annotations

import pytest

from niceeval._core.assertion import AssertionResult, JudgeCall
from niceeval._core.results import RunResult
from niceeval._run.judge_swap import EVERY, compare_judges, pair_verdicts


def verdict(name: str, state: str, score: float | None, model: str, *, key: str | None = None) -> AssertionResult:
    return AssertionResult(
        name=name, severity="soft", score=score, threshold=0.5, state=state,  # type: ignore[arg-type]
        judge_calls=[JudgeCall(model=model, score=score)], key=key,
    )  # fmt: skip


def run(eval_id: str, *assertions: AssertionResult, run_index: int = 0) -> RunResult:
    return RunResult(eval_id=eval_id, file="e.py", line=1, run_index=run_index, outcome="passed", duration_s=0.0,
                     assertions=list(assertions))  # fmt: skip


def plain(name: str) -> AssertionResult:
    return AssertionResult(name=name, severity="gate", score=1.0, threshold=1.0, state="passed")


def test_each_judge_assertion_pairs_with_its_namesake_in_the_same_eval_run() -> None:
    before = [
        run("a", verdict("rubric(x)", "passed", 0.9, "old"), plain("includes('ok')"),
            verdict("rubric(x)", "failed", 0.1, "old")),
        run("a", verdict("rubric(x)", "passed", 0.8, "old"), run_index=1),
        run("gone", verdict("rubric(x)", "passed", 0.9, "old")),
    ]  # fmt: skip
    after = [
        run("a", verdict("rubric(x)", "failed", 0.2, "new"), verdict("rubric(x)", "failed", 0.3, "new")),
        run("a", verdict("rubric(x)", "passed", 0.7, "new"), run_index=1),
    ]
    pairs = pair_verdicts(before, after)
    assert [(p.eval_id, p.run_index, p.before.score, p.after.score) for p in pairs] == [
        ("a", 0, 0.9, 0.2), ("a", 0, 0.1, 0.3), ("a", 1, 0.8, 0.7),
    ]  # fmt: skip


def test_a_keyed_assertion_pairs_by_key_across_a_reworded_rubric() -> None:
    before = [run("a", verdict("rubric('polite?')", "passed", 0.9, "old", key="tone"))]
    after = [run("a", verdict("rubric('is it polite?')", "passed", 0.8, "new", key="tone"))]
    (pair,) = pair_verdicts(before, after)
    assert pair.assertion == "[tone]"


def test_inconclusive_verdicts_are_counted_apart() -> None:
    before = [run(e, verdict("r", "passed", 0.9, "old")) for e in "abc"]
    after = [run("a", verdict("r", "passed", 0.9, "new")), run("b", verdict("r", "inconclusive", None, "new")),
             run("c", verdict("r", "failed", 0.2, "new"))]  # fmt: skip
    compared = compare_judges(pair_verdicts(before, after), run_id="r1", rescore_id="r2", judge="new")
    (row,) = compared.assertions
    assert (row.agreement.items, row.inconclusive, row.agreement.pass_to_fail) == (2, 1, 1)
    assert row.scores is not None and row.scores.n == 2
    assert (row.before_models, row.after_models) == (("old",), ("new",))
    assert compared.every.assertion == EVERY


def test_min_agreement_names_each_assertion_under_it() -> None:
    before = [run(e, verdict("r", "passed", 0.9, "old"), verdict("s", "passed", 0.9, "old")) for e in "abcd"]
    after = [run(e, verdict("r", "passed" if e != "a" else "failed", 0.5, "new"), verdict("s", "passed", 0.9, "new"))
             for e in "abcd"]  # fmt: skip
    pairs = pair_verdicts(before, after)
    compared = compare_judges(pairs, run_id="r1", rescore_id="r2", judge="new", min_agreement=0.8)
    assert compared.reasons == ["r: agreement 75% is under --min-agreement 80%"]
    assert compare_judges(pairs, run_id="r1", rescore_id="r2", judge="new").reasons == []


def test_min_agreement_with_no_verdict_both_judges_decided_fails() -> None:
    before = [run("a", verdict("r", "passed", 0.9, "old"))]
    after = [run("a", verdict("r", "inconclusive", None, "new"))]
    compared = compare_judges(pair_verdicts(before, after), run_id="r1", rescore_id="r2", judge="new",
                              min_agreement=0.5)  # fmt: skip
    assert compared.reasons == ["no judge verdict that both judges decided: nothing shows they agree"]


def test_each_judge_is_weighed_against_the_labels() -> None:
    before = [run(e, verdict("r", "passed", 0.9, "old")) for e in "abcd"]
    after = [run(e, verdict("r", "passed" if e in "ab" else "failed", 0.5, "new")) for e in "abcd"]
    labels = {"a": "pass", "b": "pass", "c": "fail", "d": "fail"}
    compared = compare_judges(pair_verdicts(before, after), run_id="r1", rescore_id="r2", judge="new", labels=labels)
    stored, new = compared.labels
    assert (stored.judge, stored.agreement.rate.value, stored.agreement.kappa) == ("stored", 0.5, 0.0)
    assert (new.judge, new.agreement.rate.value, new.agreement.kappa) == ("new", 1.0, pytest.approx(1.0))
    assert compared.describe()["labels"][1]["models"] == ["new"]
