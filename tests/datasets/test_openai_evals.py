"""An OpenAI Evals definition and its items run as they are: each grader an `assert:` entry with OpenAI's pass rule,
the completions data source's messages and model the prompt and the answerer; bad graders and items are errors
naming the file, the entry and the fix, and the other cases run."""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from niceeval._eval.cases import Loading, iter_cases
from niceeval._eval.config import load_config
from niceeval._eval.openai_graders import SCORERS, GraderError, evaluate, parse_formula
from niceeval._eval.reading import Reading
from niceeval._run.discovery import discover
from niceeval._run.execute import ExecOptions
from niceeval._run.plan import Plan, expand
from niceeval._run.suite import SuiteOptions, run_suite
from niceeval.testing import LLMRequest, LLMServer, Reply
from niceeval.testing._embeddings import vector

from ._helpers import Kept, write

ANSWERS = {"France": "Paris", "Spain": "I think it is Barcelona", "Italy": "Rome is the capital of Italy"}

DEFINITION = {
    "object": "eval",
    "name": "capitals",
    "data_source_config": {"type": "custom", "item_schema": {"type": "object"}, "include_sample_schema": True},
    "testing_criteria": [
        {
            "type": "string_check",
            "name": "exact",
            "input": "{{sample.output_text}}",
            "reference": "{{item.answer}}",
            "operation": "eq",
        },
        {
            "type": "string_check",
            "name": "mentions",
            "input": "{{ sample.output_text }}",
            "reference": "{{ item.answer }}",
            "operation": "ilike",
        },
        {
            "type": "text_similarity",
            "name": "overlap",
            "input": "{{sample.output_text}}",
            "reference": "{{item.answer}}",
            "evaluation_metric": "rouge_1",
            "pass_threshold": 0.25,
        },
        {
            "type": "text_similarity",
            "name": "close",
            "input": "{{sample.output_text}}",
            "reference": "{{item.answer}}",
            "evaluation_metric": "cosine",
            "pass_threshold": 0.9,
        },
        {
            "type": "score_model",
            "name": "quality",
            "model": "o4-mini",
            "input": [
                {"role": "system", "content": "Rate the answer from 1 to 10."},
                {"role": "user", "content": "Q: {{item.question}}\nA: {{sample.output_text}}"},
            ],
            "range": [1, 10],
            "pass_threshold": 7,
        },
        {
            "type": "label_model",
            "name": "verdict",
            "model": "gpt-4.1",
            "input": [{"role": "user", "content": "Is {{sample.output_text}} right for {{item.question}}?"}],
            "labels": ["correct", "incorrect"],
            "passing_labels": ["correct"],
        },
        {
            "type": "multi",
            "name": "combined",
            "graders": {
                "exact": {
                    "type": "string_check",
                    "input": "{{sample.output_text}}",
                    "reference": "{{item.answer}}",
                    "operation": "eq",
                },
                "overlap": {
                    "type": "text_similarity",
                    "input": "{{sample.output_text}}",
                    "reference": "{{item.answer}}",
                    "evaluation_metric": "rouge_1",
                    "pass_threshold": 0,
                },
            },
            "calculate_output": "(exact + 2 * overlap) / 3",
            "pass_threshold": 0.5,
        },
        {"type": "python", "name": "custom", "source": "def grade(sample, item) -> float:\n    return 1.0"},
    ],
    "data_source": {
        "type": "completions",
        "model": "gpt-4o-mini",
        "input_messages": {
            "type": "template",
            "template": [
                {"role": "developer", "content": "Answer in one word."},
                {"role": "user", "content": {"type": "input_text", "text": "{{item.question}}"}},
            ],
        },
        "sampling_params": {"temperature": 0, "max_completion_tokens": 50},
    },
}
ITEMS = [
    {"item": {"question": f"What is the capital of {country}?", "answer": answer}}
    for country, answer in (("France", "Paris"), ("Spain", "Madrid"), ("Italy", "Rome"))
]


def answer(request: LLMRequest) -> Reply:
    """The data source's model answers by country; the graders' models by what they are shown."""
    schema = (request.output_schema or {}).get("properties", {})
    prompt = "\n".join(str(m.content) for m in request.messages)
    if "result" in schema:
        return Reply(data={"reason": "judged", "result": 2 if "Barcelona" in prompt else 9})
    if "label" in schema:
        return Reply(data={"reason": "judged", "label": "incorrect" if "Barcelona" in prompt else "correct"})
    country = next(c for c in ANSWERS if c in request.last_user_text)
    return Reply(text=ANSWERS[country])


@pytest.fixture
def server(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> LLMServer:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "niceeval.config.py", "from niceeval import define_config\n\nconfig = define_config()\n")
    llm_server.set_script(answer)
    return llm_server


def run_targets(root: Path, targets: Sequence[str]) -> tuple[Kept, Plan]:
    config = load_config(root)
    found = discover(root, list(targets))
    plan = expand(found.evals, root=root, suite_variants=config.variants)
    options = SuiteOptions(
        runs=1,
        concurrency=4,
        exec=ExecOptions(timeout=30, agent=config.agent, root=root, judge=config.judge, no_cache=True),
    )
    kept = Kept()
    anyio.run(run_suite, plan.evals, [*found.errors, *plan.errors], options, [kept])
    return kept, plan


def write_definition(root: Path, definition: dict[str, Any], items: list[Any], name: str = "eval") -> None:
    write(root, f"{name}.json", json.dumps(definition, indent=2))
    write(root, f"{name}.jsonl", "".join(json.dumps(item) + "\n" for item in items))


def verdicts(kept: Kept) -> dict[str, dict[str, tuple[str, str]]]:
    return {
        key.split("[", 1)[1].rstrip("]"): {a.name: (a.severity, a.state) for a in result.assertions}
        for key, result in kept.by_id().items()
    }


def cosine(a: str, b: str) -> float:
    return sum(x * y for x, y in zip(vector(a), vector(b), strict=True))


def test_every_mappable_grader_runs_with_openais_pass_rule(tmp_path: Path, server: LLMServer) -> None:
    write_definition(tmp_path, DEFINITION, ITEMS)
    kept, plan = run_targets(tmp_path, ["eval.json"])
    # By hand: rouge_1 of a six-word reply holding the one reference word is F1 = 2 * (1/6) * 1 / (1/6 + 1) = 2/7.
    # The multi is (exact + 2 * overlap) / 3: France 1.0, Spain 0.0, Italy (0 + 4/7) / 3 = 0.19 (< 0.5).
    # The score model answers 9 (pass at 7 of 1-10), 2 for the wrong city; the label model "incorrect" for it.
    close = {
        "France": cosine("Paris", "Paris") >= 0.9,
        "Spain": cosine("I think it is Barcelona", "Madrid") >= 0.9,
        "Italy": cosine("Rome is the capital of Italy", "Rome") >= 0.9,
    }
    assert close == {"France": True, "Spain": False, "Italy": False}
    state = {True: "passed", False: "failed"}
    expected = {
        "0": [True, True, True, close["France"], True, True, True],
        "1": [False, False, False, close["Spain"], False, False, False],
        "2": [False, True, True, close["Italy"], True, True, False],
    }
    names = ["exact", "mentions", "overlap", "close", "quality", "verdict", "combined"]
    assert verdicts(kept) == {
        case: {name: ("gate", state[ok]) for name, ok in zip(names, oks, strict=True)} for case, oks in expected.items()
    }
    assert {key.split("[", 1)[1]: r.outcome for key, r in kept.by_id().items()} == {
        "0]": "passed",
        "1]": "failed",
        "2]": "failed",
    }
    italy = {a.name: a for a in kept.by_id()["eval.json::dataset[2]"].assertions}
    assert italy["overlap"].score == pytest.approx(2 / 7)
    assert italy["combined"].score == pytest.approx((0 + 2 * 2 / 7) / 3)
    assert italy["quality"].score == pytest.approx(8 / 9)
    assert "result 9 of 1-10" in italy["quality"].reason
    assert plan.notes == [
        "eval.json: OpenAI Evals: python grader 'custom' is not run (its code is never executed): write it as a "
        "check in an eval module (`niceeval import` writes one to start from)",
        "eval.json: OpenAI Evals: sampling_params.max_completion_tokens is not passed on to the model",
    ]
    assert kept.problems == []


def test_the_data_sources_messages_model_and_temperature_make_the_prompt(tmp_path: Path, server: LLMServer) -> None:
    write_definition(tmp_path, DEFINITION, ITEMS[:1])
    run_targets(tmp_path, ["eval.json"])
    by_model = {r.model: r for r in server.requests if r.model in ("gpt-4o-mini", "o4-mini", "gpt-4.1")}
    asked = by_model["gpt-4o-mini"]
    assert [(m.role, m.content) for m in asked.messages] == [
        ("system", "Answer in one word."),
        ("user", "What is the capital of France?"),
    ]
    assert asked.body["temperature"] == 0
    graded = "\n".join(str(m.content) for m in by_model["o4-mini"].messages)
    assert "system: Rate the answer from 1 to 10." in graded
    assert "Q: What is the capital of France?" in graded
    assert "A: the output (given below as data in the output tags)" in graded
    assert "Paris" in graded.split("<output-", 1)[1]  # the reply itself, as tagged data


def test_without_a_key_the_model_graders_are_inconclusive(tmp_path: Path, server: LLMServer) -> None:
    definition = {**DEFINITION, "data_source": None}
    definition["testing_criteria"] = DEFINITION["testing_criteria"][4:6]
    items = [{"item": {**ITEMS[0]["item"], "input": "What is the capital of France?"}}]
    write_definition(tmp_path, definition, items)
    agent = "from niceeval import define_config\n\nconfig = define_config(agent=lambda message: 'Paris')\n"
    write(tmp_path, "niceeval.config.py", agent)
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("OPENAI_API_KEY")
        kept, _ = run_targets(tmp_path, ["eval.json"])
    (result,) = kept.results
    assert [(a.name, a.state, a.score) for a in result.assertions] == [
        ("quality", "inconclusive", None),
        ("verdict", "inconclusive", None),
    ]
    assert result.outcome == "passed"


RAN = " (eval.json::dataset: the other cases ran)"


def test_bad_graders_and_items_name_the_file_entry_and_fix_and_the_rest_runs(tmp_path: Path, server: LLMServer) -> None:
    definition = {
        "testing_criteria": [
            {"type": "regex_check", "name": "pattern"},
            {
                "type": "string_check",
                "name": "op",
                "input": "{{sample.output_text}}",
                "reference": "x",
                "operation": "has",
            },
            {
                "type": "multi",
                "name": "sneaky",
                "graders": {"a": DEFINITION["testing_criteria"][0]},
                "calculate_output": "__import__('os').system('true')",
            },
            {
                "type": "string_check",
                "name": "sample",
                "input": "{{sample.output}}",
                "reference": "x",
                "operation": "eq",
            },
            {
                "type": "string_check",
                "name": "exact",
                "input": "{{sample.output_text}}",
                "reference": "{{item.answer}}",
                "operation": "eq",
            },
        ],
        "data_source": DEFINITION["data_source"],
    }
    items = [ITEMS[0], {"item": {"question": "What is the capital of Spain?"}}, "not an item"]
    write_definition(tmp_path, definition, items)
    kept, _ = run_targets(tmp_path, ["eval.json"])
    assert {key.split("::")[1]: r.outcome for key, r in kept.by_id().items()} == {"dataset[0]": "passed"}
    problems = [f"{p.location}: {p.message}" for p in kept.problems]
    assert problems == [
        "eval.json: testing_criteria[0] (pattern): unknown grader type 'regex_check'; the types are string_check, "
        "text_similarity, score_model, label_model, multi, python; this grader is left out" + RAN,
        "eval.json: testing_criteria[1] (op): `operation` 'has' is none of eq, ne, like, ilike; this grader is "
        "left out" + RAN,
        "eval.json: testing_criteria[2] (sneaky): `calculate_output` may call only min, max, abs, floor, ceil, exp, "
        "sqrt, log; this grader is left out" + RAN,
        "eval.json: testing_criteria[3] (sample): {{sample.output}}: the sample has output_text, output_json; use "
        "one of them; this grader is left out" + RAN,
        "eval.json: row 1: item at eval.jsonl:2: exact (assert[0]) uses {{item.answer}}, which this item lacks; add "
        "the field to the item or fix the grader's template" + RAN,
        "eval.json: row 2: eval.jsonl:3: an item line is {\"item\": {...}}, got 'not an item'" + RAN,
    ]


def test_a_run_of_the_command_line_exits_2_on_a_bad_grader(tmp_path: Path, server: LLMServer) -> None:
    from niceeval.cli import main

    definition = {**DEFINITION, "testing_criteria": [{"type": "regex_check"}, DEFINITION["testing_criteria"][1]]}
    write_definition(tmp_path, definition, ITEMS[:1])
    assert main(["run", "eval.json", "--no-store"]) == 2


@pytest.mark.parametrize(
    "formula",
    ["a.__class__", "a if b else 1", "[a][0]", "a < b", "'x'", "b", "lambda: 1", "a and b", "open('x')", "~a"],
)
def test_a_multi_formula_is_arithmetic_over_its_graders_only(formula: str) -> None:
    with pytest.raises(GraderError, match="calculate_output"):
        parse_formula(formula, ["a"])


def test_a_multi_formula_computes_with_powers_and_functions() -> None:
    tree = parse_formula("max(a, 0.5) * 2 ^ 2 - -sqrt(b) + abs(floor(-1.5))", ["a", "b"])
    assert evaluate(tree, {"a": 0.25, "b": 4.0}) == 0.5 * 4 + 2 + 2


@pytest.mark.parametrize("metric", ["fuzzy_match", "bleu", "gleu", "meteor", "rouge_1", "rouge_2", "rouge_l"])
def test_each_text_metric_is_one_for_the_same_text_and_low_for_none_shared(metric: str) -> None:
    scorer = SCORERS[metric]
    assert scorer("the cat sat on the mat", "the cat sat on the mat") == pytest.approx(1.0, abs=0.01)
    assert scorer("zebra quantum", "the cat sat on the mat") < (0.5 if metric == "fuzzy_match" else 1e-9)


def test_text_metrics_agree_with_their_libraries_definitions() -> None:
    import sacrebleu
    from nltk.translate.gleu_score import sentence_gleu
    from rouge_score import rouge_scorer

    reply, reference = "the cat sat on the mat", "the cat sat on a mat"
    assert SCORERS["bleu"](reply, reference) == pytest.approx(sacrebleu.sentence_bleu(reply, [reference]).score / 100)
    assert SCORERS["gleu"](reply, reference) == pytest.approx(sentence_gleu([reference.split()], reply.split()))
    lcs = rouge_scorer.RougeScorer(["rougeL"]).score(reference, reply)["rougeL"].fmeasure
    assert SCORERS["rouge_l"](reply, reference) == pytest.approx(lcs) == pytest.approx(5 / 6)
    # METEOR without WordNet's data: exact and stem matches only (5 of 6 words, in two chunks)
    assert 0.5 < SCORERS["meteor"](reply, reference) < 1.0
    assert math.isclose(SCORERS["rouge_1"](reply, reference), 5 / 6)


def test_items_come_inline_from_data_or_from_a_dashboard_export(tmp_path: Path, server: LLMServer) -> None:
    inline = {**DEFINITION}
    inline["data_source"] = {**DEFINITION["data_source"], "source": {"type": "file_content", "content": ITEMS[:2]}}
    write(tmp_path, "inline.json", json.dumps(inline))
    cases = list(iter_cases("inline.json", eval_file=tmp_path / "x.py", root=tmp_path, loading=Loading()))
    assert [c.data["item"]["answer"] for c in cases] == ["Paris", "Madrid"]
    write(tmp_path, "exported/capitals.json", json.dumps(DEFINITION))
    write(tmp_path, "exported/eval_items_2026-11-01.jsonl", json.dumps(ITEMS[2]) + "\n")
    cases = list(iter_cases("exported/capitals.json", eval_file=tmp_path / "x.py", root=tmp_path, loading=Loading()))
    assert [c.data["item"]["answer"] for c in cases] == ["Rome"]
    write(tmp_path, "other.jsonl", json.dumps(ITEMS[1]) + "\n")
    found = iter_cases(
        "exported/capitals.json",
        eval_file=tmp_path / "x.py",
        root=tmp_path,
        loading=Loading(),
        reading=Reading(data=tmp_path / "other.jsonl"),
    )
    assert [c.data["input"] for c in found] == ["What is the capital of Spain?"]


def test_niceeval_import_writes_a_module_with_the_same_verdicts(tmp_path: Path, server: LLMServer) -> None:
    from niceeval._eval.importing import import_suite

    write(tmp_path, "eval.json", json.dumps(DEFINITION))
    write(tmp_path, "items.jsonl", "".join(json.dumps(item) + "\n" for item in ITEMS))
    imported = import_suite(tmp_path / "eval.json", tmp_path, Reading(data=tmp_path / "items.jsonl"))
    assert imported.problems == []
    assert "openai_agent('openai/gpt-4o-mini', system='Answer in one word.', " in imported.code
    write(tmp_path, "evals/capitals.py", imported.code)
    coded, _ = run_targets(tmp_path, ["evals/capitals.py"])
    write(tmp_path, "eval.jsonl", "".join(json.dumps(item) + "\n" for item in ITEMS))
    direct, _ = run_targets(tmp_path, ["eval.json"])
    assert verdicts(coded) == verdicts(direct)
    assert {r.outcome for r in coded.results} == {"passed", "failed"}


def doc_answer(request: LLMRequest) -> Reply:
    """docs/migrating.md's worked example: the model says "Paris." and "Sydney"; the judge agrees only with Paris."""
    prompt = "\n".join(str(m.content) for m in request.messages)
    if "label" in (request.output_schema or {}).get("properties", {}):
        return Reply(data={"reason": "checked", "label": "incorrect" if "Sydney" in prompt else "correct"})
    return Reply(text="Paris." if "France" in request.last_user_text else "Sydney")


@pytest.mark.slow
def test_the_worked_example_in_the_migration_guide_runs_as_documented(tmp_path: Path) -> None:
    import subprocess
    import sys

    page = (Path(__file__).resolve().parents[2] / "docs" / "migrating.md").read_text(encoding="utf-8")
    section = page.split("## OpenAI Evals", 1)[1].split("\n## ", 1)[0]
    for block in re.finditer(r"```\w+\n# file: (?P<path>\S+)\n(?P<body>.*?)```", section, re.S):
        write(tmp_path, block["path"], block["body"])
    write(tmp_path, "niceeval.config.py", "from niceeval import define_config\n\nconfig = define_config()\n")
    with LLMServer(doc_answer) as server:
        env = {**os.environ, "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": server.base_url}
        cli = [sys.executable, "-m", "niceeval.cli"]
        ran = subprocess.run(
            [*cli, "run", "--no-store", "capitals.json"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        subprocess.run([*cli, "import", "capitals.json"], cwd=tmp_path, env=env, check=True, timeout=120)
        coded = subprocess.run(
            [*cli, "run", "--no-store", "evals/capitals.py"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert ran.returncode == coded.returncode == 1, ran.stdout + ran.stderr
    for done in (ran, coded):
        assert "1 passed, 0 scored, 1 failed, 0 skipped (2 evals, 2 runs)" in done.stdout, done.stdout
    assert "python grader 'short' is not run" in ran.stderr
    failed = ran.stdout.split("dataset[1]", 1)[1]
    assert all(name in failed for name in ("names the city", "close to the answer", "correct"))


def test_item_reference_messages_and_sample_output_json(tmp_path: Path, server: LLMServer) -> None:
    agent = (
        'from niceeval import define_config\n\nconfig = define_config(agent=lambda message: \'{"city": "Paris"}\')\n'
    )
    write(tmp_path, "niceeval.config.py", agent)
    definition = {
        "testing_criteria": [
            {
                "type": "string_check",
                "name": "city",
                "input": "{{sample.output_json.city}}",
                "reference": "{{item.expected.city}}",
                "operation": "eq",
            },
            {
                "type": "multi",
                "name": "scored",
                "graders": {"a": DEFINITION["testing_criteria"][1]},
                "calculate_output": "a / 2",
            },
        ],
        "data_source": {
            "type": "completions",
            "input_messages": {"type": "item_reference", "item_reference": "item.messages"},
        },
    }
    items = [
        {"item": {"messages": [{"role": "user", "content": "Where?"}], "expected": {"city": city}, "answer": city}}
        for city in ("Paris", "Rome")
    ]
    write_definition(tmp_path, definition, items)
    kept, _ = run_targets(tmp_path, ["eval.json"])
    assert verdicts(kept) == {
        "0": {"city": ("gate", "passed"), "scored": ("gate", "passed")},
        "1": {"city": ("gate", "failed"), "scored": ("gate", "passed")},  # no pass_threshold: a score that passes
    }
    assert [a.score for a in kept.by_id()["eval.json::dataset[0]"].assertions] == [1.0, 0.5]


@pytest.mark.parametrize(
    ("grader", "message"),
    [
        ({"type": "label_model", "input": "x", "labels": ["a"], "passing_labels": ["b"]}, "`passing_labels` must list"),
        ({"type": "score_model", "input": "x", "range": [1, 10], "pass_threshold": 11}, "outside the range 1-10"),
        ({"type": "score_model", "input": "x", "range": [5, 1]}, "`range` must be [low, high]"),
        ({"type": "score_model", "input": [{"content": "x"}]}, "a message is {role: ..., content: ...}"),
        ({"type": "text_similarity", "input": "x", "reference": "y", "evaluation_metric": "bleu"}, "pass_threshold"),
        ({"type": "text_similarity", "input": "x", "reference": "y", "evaluation_metric": "cider"}, "none of"),
        (
            {"type": "multi", "graders": {"a": {"type": "score_model", "input": "x"}}, "calculate_output": "a"},
            "a multi",
        ),
    ],
)
def test_a_grader_that_cannot_run_says_which_key_and_what_to_write(grader: dict[str, Any], message: str) -> None:
    from niceeval._eval.openai_graders import check

    with pytest.raises(GraderError, match=re.escape(message)):
        check(grader)


def test_import_takes_the_items_from_data(
    tmp_path: Path, server: LLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from niceeval.cli import main

    write(tmp_path, "eval.json", json.dumps(DEFINITION))
    write(tmp_path, "exports/items.jsonl", "".join(json.dumps(item) + "\n" for item in ITEMS[:2]))
    assert main(["import", "eval.json", "--data", "missing.jsonl"]) == 2
    assert "--data missing.jsonl is not a file" in capsys.readouterr().err
    assert main(["import", "eval.json", "--data", "exports/items.jsonl"]) == 0
    assert "(2 cases)" in capsys.readouterr().out
    assert "'answer': 'Madrid'" in (tmp_path / "evals" / "eval.py").read_text()
