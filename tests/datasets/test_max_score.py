"""max-score, exactly as promptfoo defines it: weighted average or sum of the other assertions' scores,
first wins ties, the least bad is still selected, nothing below the threshold, and an error with nothing to
aggregate. Then the same rules across the variants' runs of a case, in a real suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from niceeval import UsageError
from niceeval._core.assertion import AssertionResult
from niceeval._eval.compare import MaxScore, _max_score_settings, select_max

from ._helpers import run_project, write


def scored(name: str, score: float | None, *, state: str = "passed") -> AssertionResult:
    return AssertionResult(name=name, severity="gate", score=score, threshold=1.0, state=state)  # type: ignore[arg-type]


def test_the_worked_example_weights_python_3_rubric_1_contains_1_gives_0_9() -> None:
    output = [scored("python", 1.0), scored("llm-rubric", 0.5), scored("contains", 1.0)]
    settings = MaxScore(weights={"python": 3, "llm-rubric": 1})
    assert settings.aggregate(output) == pytest.approx(0.9)


def test_sum_adds_the_weighted_scores() -> None:
    output = [scored("python", 1.0), scored("llm-rubric", 0.5), scored("contains", 1.0)]
    assert MaxScore(method="sum", weights={"python": 3}).aggregate(output) == pytest.approx(4.5)


def test_pass_fail_assertions_count_as_one_and_zero() -> None:
    output = [scored("includes('a')", 1.0), scored("includes('b')", 0.0, state="failed")]
    assert MaxScore().aggregate(output) == 0.5


def test_weights_apply_by_kind_to_every_assertion_of_that_kind_and_by_exact_name_first() -> None:
    output = [scored("includes('a')", 1.0), scored("includes('b')", 0.0), scored("rubric(clear)", 0.5)]
    assert MaxScore(weights={"includes": 2}).aggregate(output) == pytest.approx((1.0 * 2 + 0 * 2 + 0.5) / 5)
    by_name = MaxScore(weights={"includes": 2, "includes('b')": 0})
    assert by_name.aggregate(output) == pytest.approx((1.0 * 2 + 0.5) / 3)


def test_the_highest_aggregate_is_selected() -> None:
    outputs = [[scored("a", 0.2)], [scored("a", 0.9)], [scored("a", 0.5)]]
    selection = select_max(MaxScore(), outputs)
    assert (selection.selected, selection.aggregates) == (1, [0.2, 0.9, 0.5])


def test_a_tie_goes_to_the_first_output() -> None:
    outputs = [[scored("a", 0.4)], [scored("a", 0.7)], [scored("a", 0.7)]]
    assert select_max(MaxScore(), outputs).selected == 1


def test_when_all_outputs_fail_the_least_bad_is_still_selected() -> None:
    outputs = [[scored("a", 0.0, state="failed")], [scored("a", 0.3, state="failed")]]
    assert select_max(MaxScore(), outputs).selected == 1


def test_below_the_threshold_no_output_is_selected() -> None:
    outputs = [[scored("a", 0.5)], [scored("a", 0.6)]]
    assert select_max(MaxScore(threshold=0.7), outputs).selected is None
    assert select_max(MaxScore(threshold=0.6), outputs).selected == 1


def test_with_no_other_assertions_there_is_nothing_to_aggregate() -> None:
    selection = select_max(MaxScore(), [[], []])
    assert (selection.selected, selection.aggregates) == (None, [None, None])


def test_inconclusive_assertions_have_no_score_and_are_left_out() -> None:
    output = [scored("rubric(x)", None, state="inconclusive"), scored("a", 0.4)]
    assert MaxScore().aggregate(output) == 0.4


@pytest.mark.parametrize(
    ("method", "weights", "threshold", "message"),
    [
        ("mean", None, None, "method is 'average'"),
        ("average", {"includes": -1}, None, "weights maps"),
        ("average", ["includes"], None, "weights maps"),
        ("average", None, "high", "threshold is a number"),
    ],
)
def test_bad_max_score_settings_say_what_to_write(
    method: str, weights: object, threshold: object, message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        _max_score_settings(method, weights, threshold, "t.max_score()")


PROJECT = """\
from niceeval import define_eval
from niceeval.expect import includes, similarity

@define_eval(
    cases=[{{"id": "paris", "city": "Paris"}}],
    variants={{"prompt": {{"terse": "{terse}", "chatty": "{chatty}", "polite": "{polite}"}}}},
    agent=lambda message: message,
)
async def answer(t):
    await t.send(t.variant["prompt"])
    t.check(t.reply, includes(t.case["city"]))
    t.check(t.reply, includes("please"))
    t.max_score({settings})
"""


def project(root: Path, *, terse: str, chatty: str, polite: str, settings: str = "") -> dict[str, object]:
    write(root, "evals/max_score_eval.py", PROJECT.format(terse=terse, chatty=chatty, polite=polite, settings=settings))
    kept = run_project(root)
    return {r.variant["prompt"]: r for r in kept.results if r.variant}  # type: ignore[index]


def max_score_of(result: object) -> AssertionResult:
    return next(a for a in result.assertions if a.name == "max_score")  # type: ignore[attr-defined]


def test_across_variants_the_best_run_passes_max_score_and_the_others_fail_it(tmp_path: Path) -> None:
    runs = project(tmp_path, terse="Paris", chatty="Paris, please", polite="please")
    assert {name: max_score_of(r).state for name, r in runs.items()} == {
        "terse": "failed",
        "chatty": "passed",
        "polite": "failed",
    }
    outcomes = [runs[n].outcome for n in ("terse", "chatty", "polite")]  # type: ignore[attr-defined]
    assert outcomes == ["failed", "passed", "failed"]
    assert "prompt=terse 0.500, prompt=chatty 1.000, prompt=polite 0.500" in max_score_of(runs["terse"]).reason


def test_across_variants_a_tie_goes_to_the_first_variant(tmp_path: Path) -> None:
    runs = project(tmp_path, terse="Paris", chatty="please", polite="Paris")
    assert [max_score_of(runs[n]).state for n in ("terse", "chatty", "polite")] == ["passed", "failed", "failed"]


def test_across_variants_weights_change_the_winner(tmp_path: Path) -> None:
    weights = "weights={\"includes('please')\": 3}"
    runs = project(tmp_path, terse="Paris", chatty="please", polite="nothing", settings=weights)
    assert [max_score_of(runs[n]).state for n in ("terse", "chatty", "polite")] == ["failed", "passed", "failed"]


def test_across_variants_below_the_threshold_every_run_fails_max_score(tmp_path: Path) -> None:
    runs = project(tmp_path, terse="Paris", chatty="please", polite="x", settings="threshold=0.75")
    assert {max_score_of(r).state for r in runs.values()} == {"failed"}
    assert "none selected: no aggregate reached the threshold 0.75" in max_score_of(runs["terse"]).reason


def test_max_score_can_be_soft_so_losing_variants_are_scored(tmp_path: Path) -> None:
    write(
        tmp_path,
        "evals/max_soft.py",
        """\
        from niceeval import define_eval
        from niceeval.expect import similarity

        @define_eval(variants={"reply": ["abc", "abd"]}, agent=lambda m: m)
        async def soft(t):
            await t.send(t.variant["reply"])
            t.check(t.reply, similarity("abc").at_least(0.5))
            t.max_score().soft()
        """,
    )
    outcomes = {r.variant["reply"]: r.outcome for r in run_project(tmp_path).results}  # type: ignore[index]
    assert outcomes == {"abc": "passed", "abd": "scored"}


def test_max_score_with_nothing_to_aggregate_is_an_author_error_naming_the_line(tmp_path: Path) -> None:
    write(
        tmp_path,
        "evals/max_empty.py",
        """\
        from niceeval import define_eval

        @define_eval(variants={"x": [1, 2]})
        def empty(t):
            t.max_score()
        """,
    )
    kept = run_project(tmp_path)
    assert {r.outcome for r in kept.results} == {"failed"}
    assert kept.summary is not None
    (problem,) = kept.summary.problems
    assert problem.kind == "usage" and problem.location.endswith("evals/max_empty.py:5")
    assert "has nothing to aggregate" in problem.message
    assert kept.summary is not None and kept.summary.exit_code == 2


def test_runs_of_a_group_are_compared_per_run_index(tmp_path: Path) -> None:
    write(
        tmp_path,
        "evals/max_runs.py",
        """\
        from niceeval import define_eval
        from niceeval.expect import equals

        seen = {}

        @define_eval(variants={"v": ["a", "b"]})
        def per_run(t):
            n = seen[t.variant.v] = seen.get(t.variant.v, -1) + 1
            # run 0: a wins; run 1: b wins
            t.check((n == 0) == (t.variant.v == "a"), equals(True))
            t.max_score()
        """,
    )
    # one at a time: the eval counts its calls, so run 0 of a variant must start before its run 1
    kept = run_project(tmp_path, runs=2, min_pass_rate=0.0, concurrency=1)
    wins = [(r.variant, r.run_index) for r in kept.results if max_score_of(r).state == "passed"]
    assert sorted((v["v"], i) for v, i in wins if v) == [("a", 0), ("b", 1)]
