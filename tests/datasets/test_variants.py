"""Variants: one eval per combination, `t.variant`, agents per variant, ids, and the comparison table."""

from __future__ import annotations

from pathlib import Path

import pytest

from niceeval import UsageError
from niceeval._core.results import RunResult
from niceeval._eval.variants import parse_variants
from niceeval.render import VariantTable
from niceeval.report._variants import variant_lines, variant_records

from ._helpers import run_project, write

ECHO = """\
from niceeval import define_config
config = define_config(agent=lambda message: "echo: " + message)
"""


def test_every_combination_of_the_dimensions_is_a_variant_named_by_its_values() -> None:
    variants = parse_variants({"prompt": {"short": "Be brief.", "long": "Explain."}, "model": ["m-1", "m-2"]}, "x")
    assert [v.name for v in variants] == [
        "prompt=short,model=m-1",
        "prompt=short,model=m-2",
        "prompt=long,model=m-1",
        "prompt=long,model=m-2",
    ]
    assert (variants[2]["prompt"], variants[2].model) == ("Explain.", "m-1")


def test_a_long_list_value_is_named_by_its_index() -> None:
    (first, second) = parse_variants({"prompt": ["You are a helpful, precise assistant.", "short"]}, "x")
    assert (first.name, second.name) == ("prompt=0", "prompt=short")
    assert first["prompt"] == "You are a helpful, precise assistant."


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"prompt": []}, "is empty"),
        ({"prompt": "abc"}, "takes a list of values or a dict"),
        ({"prompt": ["a", "a"]}, "two values named alike"),
        ({"bad key": ["a"]}, "must be a name"),
        ([1, 2], "takes a dict of dimension -> values"),
    ],
)
def test_bad_variants_say_what_to_write(value: object, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_variants(value, "evals/x.py:3")


def test_each_variant_runs_with_t_variant_and_an_id_per_case_and_variant(tmp_path: Path) -> None:
    write(tmp_path, "niceeval.config.py", ECHO)
    write(
        tmp_path,
        "evals/var_each.py",
        """\
        from niceeval import define_eval
        from niceeval.expect import includes

        @define_eval(cases=[{"id": "a", "q": "hi"}], variants={"tone": {"warm": "Dear", "cold": "Hey"}})
        async def greet(t):
            await t.send(t.variant["tone"] + " " + t.case["q"])
            t.check(t.reply, includes("Dear"))
        """,
    )
    results = run_project(tmp_path).by_id()
    warm, cold = results["evals/var_each.py::greet[a][tone=warm]"], results["evals/var_each.py::greet[a][tone=cold]"]
    assert (warm.outcome, cold.outcome) == ("passed", "failed")
    assert (warm.variant, warm.group, warm.case_id) == ({"tone": "warm"}, "evals/var_each.py::greet[a]", "a")


def test_config_variants_apply_to_every_eval_and_an_eval_s_own_variants_win(tmp_path: Path) -> None:
    write(
        tmp_path,
        "niceeval.config.py",
        """\
        from niceeval import define_config
        config = define_config(agent=lambda m: m, variants={"model": ["a", "b"]})
        """,
    )
    write(
        tmp_path,
        "evals/var_config.py",
        """\
        from niceeval import define_eval

        @define_eval
        def suite_wide(t):
            pass

        @define_eval(variants={"lang": ["en"]})
        def own(t):
            pass
        """,
    )
    assert sorted(run_project(tmp_path).by_id()) == [
        "evals/var_config.py::own[lang=en]",
        "evals/var_config.py::suite_wide[model=a]",
        "evals/var_config.py::suite_wide[model=b]",
    ]


def test_per_variant_builds_one_agent_per_combination(tmp_path: Path) -> None:
    write(
        tmp_path,
        "niceeval.config.py",
        """\
        from pathlib import Path
        from niceeval import define_config
        from niceeval.agents import per_variant

        def make(variant):
            with (Path(__file__).parent / "built.txt").open("a") as log:
                log.write(variant.name + "\\n")
            return lambda message: f"{variant['model']} says {message}"

        config = define_config(agent=per_variant(make))
        """,
    )
    write(
        tmp_path,
        "evals/var_agent.py",
        """\
        from niceeval import define_eval
        from niceeval.expect import includes

        @define_eval(cases=[{"id": 1}, {"id": 2}], variants={"model": ["m1", "m2"]})
        async def who(t):
            await t.send("hi")
            t.check(t.reply, includes(t.variant.model + " says hi"))
        """,
    )
    kept = run_project(tmp_path)
    assert [r.outcome for r in kept.results] == ["passed"] * 4
    assert sorted((tmp_path / "built.txt").read_text().split()) == ["model=m1", "model=m2"]


def test_t_variant_outside_a_variant_eval_is_a_usage_error_that_says_how(tmp_path: Path) -> None:
    write(tmp_path, "niceeval.config.py", ECHO)
    write(
        tmp_path,
        "evals/var_missing.py",
        """\
        from niceeval import define_eval

        @define_eval
        def plain(t):
            t.variant
        """,
    )
    (result,) = run_project(tmp_path).results
    assert result.error is not None and "define_eval(variants=" in result.error.message


def _run(variant: str, outcome: str, score: float, cost: float | None) -> RunResult:
    from niceeval._core.assertion import AssertionResult
    from niceeval._core.results import Spend

    assertion = AssertionResult(name="includes('x')", severity="gate", score=score, threshold=1.0, state="passed")
    return RunResult(
        eval_id=f"e[{variant}]",
        file="e.py",
        line=1,
        outcome=outcome,  # type: ignore[arg-type]
        duration_s=1.0,
        assertions=[assertion],
        variant={"prompt": variant},
        agent_spend=Spend(calls=1, cost=cost),
    )


def test_the_comparison_table_gives_pass_rate_mean_score_per_kind_cost_and_latency() -> None:
    table = VariantTable()
    for run in (_run("a", "passed", 1.0, 0.5), _run("a", "failed", 0.0, 0.25), _run("b", "scored", 0.5, None)):
        table.add(run)
    rows = {row["variant"]: row for row in variant_records(table, strict=False)}
    estimates = rows["prompt=a"].pop("pass_rate_estimate"), rows["prompt=a"].pop("mean_score_estimates")
    assert estimates[0]["value"] == 0.5 and estimates[0]["clusters"] == 1  # both runs are of one case
    assert estimates[1]["includes"]["note"] == "1 case: no spread to measure"
    assert rows["prompt=a"] == {
        "variant": "prompt=a",
        "runs": 2,
        "pass_rate": 0.5,
        "mean_scores": {"includes": 0.5},
        "cost": 0.75,
        "mean_duration_s": 1.0,
        "latency_p50_s": None,
        "latency_p95_s": None,
    }
    assert (rows["prompt=b"]["pass_rate"], rows["prompt=b"]["cost"]) == (1.0, None)
    assert variant_records(table, strict=True)[1]["pass_rate"] == 0.0
    assert variant_lines(table, strict=False)[2].split() == ["prompt=a", "2", "50%", "-", "0.50", "$0.7500", "1.00s"]


def test_runs_without_a_variant_leave_the_table_empty() -> None:
    table = VariantTable()
    table.add(_run("a", "passed", 1.0, 0.0).model_copy(update={"variant": None}))
    assert variant_lines(table, strict=False) == []
