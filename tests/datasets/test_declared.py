"""Declarative assertions: a case row's `assert:` entries, `t.check_case()`, and `niceeval run data/cases.yaml`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from niceeval._core.assertion import Matcher, Verdict
from niceeval._eval.config import load_config
from niceeval._eval.declared import (
    BY_NAME,
    DEEPEVAL_NEAREST,
    INSPECT_NEAREST,
    TYPES,
    DeclaredError,
    coverage_table,
    parse_entry,
)
from niceeval._run.discovery import discover
from niceeval._run.execute import ExecOptions
from niceeval._run.plan import expand
from niceeval._run.suite import SuiteOptions, run_suite
from niceeval.testing import LLMServer, Reply

from ._helpers import Kept, write

ROOT = Path(__file__).resolve().parents[2]

AGENT = """\
from niceeval import define_config


def agent(message, session):
    if "weather" in message:
        session.tool("get_weather", {"city": "Paris"}, output="sunny")
    session.usage("openai/gpt-4o-mini", input_tokens=1000, output_tokens=100)
    if "json" in message:
        return '{"city": "Paris", "n": 3}'
    return "The capital of France is Paris."


config = define_config(agent=agent, judge={"model": "openai/judge"})
"""


@pytest.fixture(autouse=True)
def in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Locations are shown relative to the working directory: the project root, as under `niceeval run`."""
    monkeypatch.chdir(tmp_path)


def run_targets(root: Path, targets: Sequence[str]) -> Kept:
    """Discover, plan and run `targets` (dataset files or eval modules) with the config at `root`."""
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
    return kept


async def score(matcher: Matcher, value: Any) -> float:
    raw = matcher.score_fn(value)
    if hasattr(raw, "__await__"):
        raw = await raw
    verdict = raw if isinstance(raw, Verdict) else Verdict(raw)
    return float(verdict.score)


def passes(entry: dict[str, Any], value: Any) -> bool:
    declared = parse_entry(entry, 0)
    assert declared.type.build is not None
    matcher = declared.type.build(declared.entry)
    if declared.negate:
        from niceeval._eval.declared import negated

        matcher = negated(matcher)
    return anyio.run(score, matcher, value) >= matcher.threshold


VALUE_CASES = [
    ({"type": "includes", "value": "Paris"}, "in Paris", "in Rome"),
    ({"type": "contains", "value": "Paris"}, "in Paris", "in Rome"),
    ({"type": "not-contains", "value": "Rome"}, "in Paris", "in Rome"),
    ({"type": "excludes", "value": "Rome"}, "in Paris", "in Rome"),
    ({"type": "icontains", "value": "PARIS"}, "in paris", "in rome"),
    ({"type": "starts-with", "value": "Yes"}, "Yes, Paris", "Well, yes"),
    ({"type": "regex", "value": r"\d{4}"}, "order 1234", "order 12"),
    ({"type": "not-regex", "value": r"\d"}, "no digits", "1 digit"),
    ({"type": "contains-all", "value": ["a", "b"]}, "a and b", "a only"),
    ({"type": "contains-any", "value": ["x", "b"]}, "a and b", "a only"),
    ({"type": "icontains-all", "value": ["A", "B"]}, "a and b", "a only"),
    ({"type": "icontains-any", "value": ["X", "B"]}, "a and b", "a only"),
    ({"type": "equals", "value": "Paris"}, "Paris", "Paris."),
    ({"type": "equals", "value": {"n": 3}}, '{"n": 3}', '{"n": 4}'),
    ({"type": "is-json"}, '{"n": 3}', "n is 3"),
    ({"type": "is_json", "value": {"type": "object", "required": ["n"]}}, '{"n": 3}', '{"m": 3}'),
    ({"type": "json_schema", "value": {"type": "array"}}, "[1]", '{"n": 1}'),
    ({"type": "contains-json"}, 'Here: {"n": 3} ok', "no json here"),
    ({"type": "contains_json", "value": {"required": ["n"]}}, 'x {"n": 3}', 'x {"m": 3}'),
    ({"type": "levenshtein", "value": "Paris", "threshold": 1}, "Pariss", "Parisss"),
    ({"type": "similarity", "value": "The capital is Paris"}, "The capital is Paris!", "Rome"),
    ({"type": "is_instance", "value": "int"}, "42", "4.2"),
    ({"type": "is_instance", "value": "str"}, "anything", 3),
    (
        {
            "type": "string_check",
            "value": {"input": "{{sample.output_text}}", "reference": "Paris", "operation": "ilike"},
        },
        "in paris",
        "in rome",
    ),
    (
        {
            "type": "text_similarity",
            "value": {
                "input": "{{sample.output_text}}",
                "reference": "the cat sat",
                "evaluation_metric": "rouge_l",
                "pass_threshold": 0.5,
            },
        },
        "the cat sat down",
        "a dog ran",
    ),
    (
        {
            "type": "multi",
            "value": {
                "graders": {
                    "a": {
                        "type": "string_check",
                        "input": "{{sample.output_text}}",
                        "reference": "x",
                        "operation": "like",
                    }
                },
                "calculate_output": "a",
                "pass_threshold": 1,
            },
        },
        "x marks",
        "y marks",
    ),
]


@pytest.mark.parametrize(("entry", "good", "bad"), VALUE_CASES, ids=lambda v: str(v)[:40])
def test_each_value_type_passes_and_misses(entry: dict[str, Any], good: str, bad: str) -> None:
    assert passes(entry, good)
    assert not passes(entry, bad)


def test_every_value_type_has_a_case_above() -> None:
    tested = {parse_entry(entry, 0).type.name for entry, _, _ in VALUE_CASES}
    assert tested == {t.name for t in TYPES if t.kind == "value"} - {"not_run"}  # not_run: its own test below


def test_a_not_run_entry_is_inconclusive_and_says_why() -> None:
    from niceeval._core.assertion import Inconclusive

    declared = parse_entry({"type": "not_run", "value": {"type": "javascript", "why": "write it in Python"}}, 0)
    assert declared.type.build is not None
    matcher = declared.type.build(declared.entry)
    assert matcher.name == "javascript (not run)"
    with pytest.raises(Inconclusive, match="not run: write it in Python") as raised:
        matcher.score_fn("anything")
    assert raised.value.cause == "not_run"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"type": "incluudes", "value": "x"},
            r"assert\[0\]: unknown assertion type 'incluudes'; did you mean 'includes'",
        ),
        ({"type": "llm-rubrik", "value": "x"}, r"did you mean 'llm-rubric'"),
        ({"type": "javascript", "value": "x"}, r"'javascript' has no niceeval equivalent: inline JavaScript"),
        ({"type": "includes", "valeu": "x"}, r"unknown key 'valeu': did you mean 'value'"),
        (
            {"type": "rubric", "value": "x", "rubricPromt": "p"},
            r"unknown key 'rubricPromt': did you mean 'rubricPrompt'",
        ),
        (
            {"type": "rubric", "value": "x", "zzz": 1},
            r"\(keys: type, value, .*, provider, model, rubricPrompt, rubric_prompt, default_model\)",
        ),
        ({"type": "includes"}, r"`value` must be a non-empty string"),
        ({"type": "regex", "value": "(unclosed"}, r"not a valid regular expression"),
        ({"type": "includes", "value": "x", "gate": True, "soft": True}, r"contradict"),
        ({"type": "rubric", "value": "x", "threshold": 7}, r"`threshold` is a score in \[0, 1\]"),
        ({"type": "not-rubric", "value": "x"}, r"only value checks can be negated"),
        ({"value": "x"}, r"needs `type:`"),
        ("includes", r"an entry is an object"),
    ],
)
def test_a_bad_entry_says_which_and_what_to_write(entry: object, message: str) -> None:
    with pytest.raises(DeclaredError, match=message):
        parse_entry(entry, 0)


def test_promptfoo_cost_and_latency_take_their_limit_from_threshold() -> None:
    assert parse_entry({"type": "cost", "threshold": 0.002}, 0).entry.value == 0.002
    latency = parse_entry({"type": "latency", "threshold": 1500}, 0)
    assert (latency.type.name, latency.entry.value) == ("max_latency", 1.5)


def test_a_dataset_runs_without_code_each_entry_recorded_like_a_hand_written_check(tmp_path: Path) -> None:
    write(tmp_path, "niceeval.config.py", AGENT)
    write(
        tmp_path,
        "data/cases.yaml",
        """\
        - id: capital
          input: What is the capital of France?
          assert:
            - {type: includes, value: Paris, metric: names-paris}
            - {type: not-contains, value: London}
            - {type: similarity, value: "The capital of France is Paris", soft: true}
        - id: json
          input: give json
          assert:
            - {type: is-json, value: {type: object, required: [city]}}
            - {type: includes, value: Rome, soft: true}
        - id: fails
          input: hello
          assert:
            - {type: includes, value: Rome}
        """,
    )
    kept = run_targets(tmp_path, ["data/cases.yaml"])
    by_id = kept.by_id()
    assert {k: r.outcome for k, r in by_id.items()} == {
        "data/cases.yaml::dataset[capital]": "passed",
        "data/cases.yaml::dataset[json]": "scored",
        "data/cases.yaml::dataset[fails]": "failed",
    }
    capital = by_id["data/cases.yaml::dataset[capital]"].assertions
    assert [(a.name, a.severity, a.threshold) for a in capital] == [
        ("names-paris", "gate", 1.0),
        ("not includes('London')", "gate", 1.0),
        ("similarity", "soft", 0.8),
    ]
    assert capital[0].location == "data/cases.yaml:1"
    miss = by_id["data/cases.yaml::dataset[json]"].assertions[1]
    assert (miss.state, miss.severity, miss.location) == ("failed", "soft", "data/cases.yaml:7")


def test_a_bad_row_is_an_error_naming_it_and_the_other_cases_still_run(tmp_path: Path) -> None:
    write(tmp_path, "niceeval.config.py", AGENT)
    write(
        tmp_path,
        "data/cases.jsonl",
        '{"id": "ok", "input": "hi", "assert": [{"type": "includes", "value": "Paris"}]}\n'
        '{"id": "typo", "input": "hi", "assert": [{"type": "icontain", "value": "paris"}]}\n',
    )
    kept = run_targets(tmp_path, ["data/cases.jsonl"])
    assert [r.eval_id for r in kept.results] == ["data/cases.jsonl::dataset[ok]"]
    (problem,) = kept.problems
    assert problem.location == "data/cases.jsonl:2"
    assert re.search(
        r"assert\[0\]: unknown assertion type 'icontain'; did you mean 'icontains'\? "
        r"\(case .*\[typo\] did not run; the other cases did\)",
        problem.message,
    ), problem


def test_a_row_without_input_says_what_to_add(tmp_path: Path) -> None:
    write(tmp_path, "niceeval.config.py", AGENT)
    write(tmp_path, "data/cases.yaml", "- id: a\n  text: hi\n")  # `question: hi` is read as a FieldSpec would
    kept = run_targets(tmp_path, ["data/cases.yaml"])
    assert kept.results == []
    (problem,) = kept.problems
    assert problem.message.startswith("1 row has no `input` field (the first at line 1, with fields id, text)")
    assert "name the field that holds the question `input`" in problem.message


def test_scoped_entries_check_the_runs_events(tmp_path: Path) -> None:
    write(tmp_path, "niceeval.config.py", AGENT)
    write(
        tmp_path,
        "data/cases.yaml",
        """\
        - id: tools
          input: what is the weather
          assert:
            - {type: called_tool, value: {name: get_weather, input: {city: Paris}}}
            - {type: not_called_tool, value: send_email}
            - {type: max_latency, value: 5}
            - {type: max_tokens, value: 2000}
            - {type: cost, threshold: 0.01}
        - id: over
          input: hi
          assert:
            - {type: called_tool, value: get_weather}
            - {type: max_tokens, value: 550}
            - {type: max_cost, value: 0.0000001, soft: true}
        """,
    )
    by_id = run_targets(tmp_path, ["data/cases.yaml"]).by_id()
    tools = by_id["data/cases.yaml::dataset[tools]"]
    assert tools.outcome == "passed", [(a.name, a.reason) for a in tools.assertions]
    assert [a.name for a in tools.assertions] == [
        "called_tool('get_weather')",
        "not_called_tool('send_email')",
        "max_latency(5s)",
        "max_tokens(2,000)",
        "max_cost($0.01)",
    ]
    over = {a.name.split("(")[0]: a for a in by_id["data/cases.yaml::dataset[over]"].assertions}
    assert over["called_tool"].state == "failed"
    assert over["max_tokens"].score == pytest.approx(550 / 1100)
    assert (over["max_cost"].severity, over["max_cost"].state) == ("soft", "failed")


@pytest.fixture
def judge_server(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)

    def answer(request: Any) -> Reply:
        choice = (request.output_schema or {}).get("properties", {}).get("choice")
        if choice is not None:  # a choice judge: the best choice (factuality's `same`, closed_qa's `yes`)
            return Reply(data={"reason": "the best choice", "choice": choice["enum"][0]})
        return Reply(data={"reason": "fine", "pass": True, "score": 0.6})

    llm_server.set_script(answer)
    return llm_server


def test_judge_entries_ask_the_judge_with_their_threshold_and_model(tmp_path: Path, judge_server: LLMServer) -> None:
    write(tmp_path, "niceeval.config.py", AGENT)
    write(
        tmp_path,
        "data/cases.yaml",
        """\
        - id: judged
          input: What is the capital of France?
          assert:
            - {type: llm-rubric, value: "names {{country}}'s capital", provider: openai/other}
            - {type: rubric, value: "is short", threshold: 0.8}
            - {type: factuality, value: "Paris is the capital of France."}
            - {type: model-graded-closedqa, value: "Does it name a city?", soft: true}
          country: France
        """,
    )
    (result,) = run_targets(tmp_path, ["data/cases.yaml"]).results
    found = [(a.name, a.severity, a.threshold, a.state) for a in result.assertions]
    assert found == [
        ('rubric("names France\'s capital")', "gate", 0.0, "passed"),
        ("rubric('is short')", "gate", 0.8, "failed"),
        ("factuality", "gate", 0.7, "passed"),
        ("closed_qa('Does it name a city?')", "soft", 0.7, "passed"),
    ]
    assert result.outcome == "failed"
    assert result.assertions[0].judge_calls[0].model == "openai/other"
    assert all(a.location == "data/cases.yaml:1" for a in result.assertions)


def test_without_a_key_a_judge_entry_is_inconclusive(tmp_path: Path) -> None:
    write(tmp_path, "niceeval.config.py", AGENT)
    write(tmp_path, "data/cases.yaml", "- input: hi\n  assert: [{type: rubric, value: polite}]\n")
    (result,) = run_targets(tmp_path, ["data/cases.yaml"]).results
    (judged,) = result.assertions
    assert (judged.state, judged.score, judged.cause, result.outcome) == ("inconclusive", None, "no_api_key", "passed")


def test_check_case_in_an_eval_module_takes_entries_and_on(tmp_path: Path) -> None:
    write(tmp_path, "niceeval.config.py", AGENT)
    write(
        tmp_path,
        "evals/mixed.py",
        """\
        from niceeval import define_eval

        @define_eval(cases=[{"id": "a", "q": "give json", "assert": [{"type": "is-json"}]}])
        async def mixed(t):
            turn = await t.send(t.case["q"])
            t.check_case()
            t.check_case([{"type": "equals", "value": 3}], on=3)
            t.check_case({"type": "includes", "value": "nope", "soft": True})
        """,
    )
    (result,) = run_targets(tmp_path, ["evals"]).results
    assert [(a.name, a.state, a.location) for a in result.assertions] == [
        ("is_json", "passed", "evals/mixed.py:6"),
        ("equals", "passed", "evals/mixed.py:7"),
        ("includes('nope')", "failed", "evals/mixed.py:8"),
    ]
    assert result.outcome == "scored"


def test_max_score_entry_weighs_the_other_entries(tmp_path: Path) -> None:
    write(
        tmp_path,
        "niceeval.config.py",
        """\
        from niceeval import define_config
        from niceeval.agents import per_variant
        config = define_config(
            agent=per_variant(lambda v: (lambda message: v["reply"])),
            variants={"reply": {"a": "alpha beta", "b": "alpha gamma"}},
        )
        """,
    )
    write(
        tmp_path,
        "data/cases.yaml",
        """\
        - id: pick
          input: hi
          assert:
            - {type: includes, value: alpha, weight: 1, soft: true}
            - {type: includes, value: beta, weight: 1, soft: true}
            - {type: includes, value: gamma, weight: 3, soft: true}
            - {type: max-score}
        """,
    )
    by_id = run_targets(tmp_path, ["data/cases.yaml"]).by_id()
    best = {key: next(a for a in r.assertions if a.name == "max_score") for key, r in by_id.items()}
    assert best["data/cases.yaml::dataset[pick][reply=b]"].state == "passed"  # (1 + 3) / 5 beats (1 + 1) / 5
    assert best["data/cases.yaml::dataset[pick][reply=a]"].state == "failed"


def test_the_coverage_table_in_docs_is_generated_from_the_mapping() -> None:
    page = (ROOT / "docs/judge.md").read_text(encoding="utf-8")
    start, end = "<!-- assert-types:start -->\n", "<!-- assert-types:end -->"
    shown = page.split(start, 1)[1].split(end, 1)[0]
    assert shown == coverage_table(), "regenerate: python -m niceeval._eval.declared > the table in docs/judge.md"
    assert all(f"`{name}`" in shown for name in BY_NAME)
    assert set(INSPECT_NEAREST) | set(DEEPEVAL_NEAREST) <= set(BY_NAME)  # the peers' columns name real types


def test_rag_entries_show_the_judge_the_rows_context(tmp_path: Path, judge_server: LLMServer) -> None:
    write(tmp_path, "niceeval.config.py", AGENT)
    write(
        tmp_path,
        "data/rag.yaml",
        """\
        - id: rag
          input: What is the capital of France?
          vars: {context: "Paris is the capital and largest city of France."}
          assert:
            - {type: context-faithfulness}
            - {type: answer-relevance}
            - {type: context-relevance}
            - {type: context-recall, value: Paris}
            - {type: faithfulness, value: "Lyon is in France.", threshold: 0.5}
        - id: no-context
          input: hi
          assert: [{type: faithfulness}]
        """,
    )
    by_id = run_targets(tmp_path, ["data/rag.yaml"]).by_id()
    rag = by_id["data/rag.yaml::dataset[rag]"]
    assert [(a.name, a.state, a.score) for a in rag.assertions] == [
        ("faithfulness", "passed", 1.0),
        ("answer_relevance", "passed", 1.0),
        ("context_relevance", "passed", 1.0),
        ("context_recall", "passed", 1.0),
        ("faithfulness", "passed", 1.0),
    ]
    prompts = [r.last_user_text for r in judge_server.requests]
    faithful = next(p for p in prompts if "faithful to the context" in p and "largest city" in p)
    assert "<context-" in faithful and "The capital of France is Paris." in faithful  # the reply is the output
    relevance = next(p for p in prompts if "holds what is needed" in p)
    assert "largest city" in relevance and "The capital of France is Paris." not in relevance  # the context is
    assert any("Lyon is in France." in p for p in prompts)
    missing = by_id["data/rag.yaml::dataset[no-context]"]
    assert missing.error is not None and "a faithfulness entry needs the retrieved context" in missing.error.message
