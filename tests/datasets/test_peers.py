"""Peers' suite files load as they are: a promptfoo config, a pydantic-evals dataset, Inspect samples; what has no
equivalent is listed once, and a bad row is its own error while the other cases run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from niceeval._eval.cases import CaseError, Loading, iter_cases
from niceeval._eval.config import load_config
from niceeval._run.discovery import discover
from niceeval._run.execute import ExecOptions
from niceeval._run.plan import Plan, expand
from niceeval._run.suite import SuiteOptions, run_suite

from ._helpers import Kept, write

AGENT = """\
from niceeval import define_config


def agent(message):
    if "ANSWER" in message:
        return "ANSWER: B"
    if "France" in message:
        return "The capital of France is Paris."
    return "I don't know."


config = define_config(agent=agent, judge={"model": "openai/judge"})
"""


@pytest.fixture(autouse=True)
def in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "niceeval.config.py", AGENT)


def plan_of(root: Path, targets: Sequence[str]) -> tuple[Plan, list[str]]:
    found = discover(root, list(targets))
    plan = expand(found.evals, root=root)
    return plan, [e.describe() for e in [*found.errors, *plan.errors]]


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


def outcomes(kept: Kept) -> dict[str, str]:
    return {key.split("::", 1)[1]: result.outcome for key, result in kept.by_id().items()}


PROMPTFOO = """\
description: capitals
prompts:
  - "What is the capital of {{country}}?"
  - file://prompts/terse.txt
providers:
  - echo
defaultTest:
  vars: {style: short}
  assert:
    - type: not-icontains
      value: "don't know"
tests:
  - description: France
    vars: {country: France}
    assert:
      - type: icontains
        value: "{{country}}"
      - type: llm-rubric
        value: names the capital of {{country}}
  - description: Spain [es]
    vars: {country: Spain}
    assert:
      - type: contains
        value: Madrid
"""


def test_a_promptfoo_config_runs_its_tests_over_its_prompts_with_its_provider(tmp_path: Path) -> None:
    write(tmp_path, "promptfooconfig.yaml", PROMPTFOO)
    write(tmp_path, "prompts/terse.txt", "Capital of {{country}} ({{style}}):")
    kept, plan = run_targets(tmp_path, ["promptfooconfig.yaml"])
    # echo answers with the prompt: "France" is in it, "Madrid" is not
    assert outcomes(kept) == {
        "dataset[France][prompt=0]": "passed",
        "dataset[France][prompt=1]": "passed",
        "dataset[Spain (es)][prompt=0]": "failed",
        "dataset[Spain (es)][prompt=1]": "failed",
    }
    france = kept.by_id()["promptfooconfig.yaml::dataset[France][prompt=1]"]
    assert [(a.name, a.severity) for a in france.assertions] == [
        ('not icontains("don\'t know")', "gate"),
        ("icontains('France')", "gate"),
        ("rubric('names the capital of France')", "gate"),
    ]
    assert france.assertions[2].state == "inconclusive"  # no API key: the judge says nothing, and passes
    assert kept.problems == [] and plan.notes == []


def test_promptfoo_bad_input_names_the_file_row_and_fix_and_the_other_tests_run(tmp_path: Path) -> None:
    write(
        tmp_path,
        "promptfooconfig.yaml",
        """\
        prompts: ["Capital of {{country}}?"]
        providers: [echo, "bedrock:anthropic.claude-v2"]
        tests:
          - vars: {country: France}
            assert: [{type: icontains, value: france}]
          - vars: {city: Rome}
          - vars: {country: Peru}
            assert: [{type: javascript, value: "output.length < 9"}]
          - vars: {country: Chile}
            assert: [{type: icontains, value: chile, transform: output.trim()}]
            repeat: 3
        sharing: true
        """,
    )
    kept, plan = run_targets(tmp_path, ["promptfooconfig.yaml"])
    # the javascript assertion is not run: recorded inconclusive under its name, and the test's other checks decide
    assert outcomes(kept) == {"dataset[0]": "passed", "dataset[2]": "passed", "dataset[3]": "passed"}
    (unrun,) = kept.by_id()["promptfooconfig.yaml::dataset[2]"].assertions
    assert (unrun.name, unrun.state, unrun.cause) == ("javascript (not run)", "inconclusive", "not_run")
    problems = [f"{p.location}: {p.message}" for p in kept.problems]
    assert problems[0].startswith("promptfooconfig.yaml: provider 'bedrock:anthropic.claude-v2' is not one niceeval")
    assert "set agent= in niceeval.config.py" in problems[0]
    assert problems[1].startswith("promptfooconfig.yaml:6: prompt '0' uses {{country}}, which this test's vars do not")
    assert len(problems) == 2
    assert plan.notes == [
        "promptfooconfig.yaml: promptfoo: config key 'sharing' has no equivalent: ignored",
        "promptfooconfig.yaml: promptfoo: javascript assertions are not run (inline JavaScript is not run; write the "
        "check in Python (`satisfies(fn, label)`)): recorded inconclusive",
        "promptfooconfig.yaml: promptfoo: test key 'repeat' has no equivalent: ignored",
        "promptfooconfig.yaml: promptfoo: assertion key 'transform' has no equivalent: ignored",
    ]


def test_promptfoo_grading_provider_becomes_the_judge_model(tmp_path: Path) -> None:
    write(
        tmp_path,
        "promptfooconfig.yaml",
        """\
        prompts: ["{{q}}"]
        defaultTest:
          options: {provider: "openai:chat:gpt-4o-mini"}
        tests:
          - vars: {q: hi}
            assert:
              - {type: llm-rubric, value: polite}
              - {type: factuality, value: hi, provider: "anthropic:messages:claude-haiku-4-5"}
        """,
    )
    (case,) = iter_cases("promptfooconfig.yaml", eval_file=tmp_path / "x.py", root=tmp_path, loading=Loading())
    assert [e["provider"] for e in case.data["assert"]] == ["openai/gpt-4o-mini", "anthropic/claude-haiku-4-5"]
    assert case.data["input"] == "hi"


PYDANTIC_EVALS = """\
# yaml-language-server: $schema=capitals_schema.json
cases:
  - name: france
    inputs: What is the capital of France?
    expected_output: The capital of France is Paris.
    metadata: {difficulty: easy}
    evaluators:
      - EqualsExpected
      - Contains: Paris
  - name: spain
    inputs: What is the capital of Spain?
    expected_output: Madrid
    evaluators:
      - Contains: {value: madrid, case_sensitive: false}
evaluators:
  - IsInstance: str
  - MaxDuration: 5
  - MyCustomEvaluator
"""


def test_a_pydantic_evals_dataset_runs_its_cases_and_evaluators(tmp_path: Path) -> None:
    write(tmp_path, "capitals.yaml", PYDANTIC_EVALS)
    kept, plan = run_targets(tmp_path, ["capitals.yaml"])
    assert outcomes(kept) == {"dataset[france]": "passed", "dataset[spain]": "failed"}
    france = kept.by_id()["capitals.yaml::dataset[france]"]
    assert [a.name for a in france.assertions] == [
        "equals",
        "includes('Paris')",
        "is_instance(str)",
        "MyCustomEvaluator (not run)",
        "max_latency(5s)",  # applied once the run has its duration
    ]
    assert france.assertions[3].state == "inconclusive"
    assert france.metadata == {"difficulty": "easy"}
    assert plan.notes == [
        "capitals.yaml: pydantic-evals: evaluator 'MyCustomEvaluator' has no equivalent (custom evaluators are "
        "Python; write them as checks in an eval module): not run"
    ]


def test_a_pydantic_evals_dataset_in_json_reads_the_same(tmp_path: Path) -> None:
    write(
        tmp_path,
        "capitals.json",
        '{"cases": [{"name": "france", "inputs": "capital of France?", "expected_output": "Paris",'
        ' "evaluators": [{"Contains": "Paris"}, {"LLMJudge": {"rubric": "right", "include_input": true}}]}]}',
    )
    (case,) = iter_cases("capitals.json", eval_file=tmp_path / "x.py", root=tmp_path, loading=Loading())
    assert case.id == "france" and case.data["input"] == "capital of France?"
    assert case.data["assert"] == [{"type": "includes", "value": "Paris"}, {"type": "rubric", "value": "right"}]


def test_inspect_samples_run_from_jsonl_csv_and_json(tmp_path: Path) -> None:
    write(
        tmp_path,
        "samples.jsonl",
        '{"id": "fr", "input": "What is the capital of France?", "target": "paris"}\n'
        '{"id": "chat", "input": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},'
        ' {"role": "user", "content": "And France?"}], "target": ["Lyon", "Paris"]}\n'
        '{"id": "mc", "input": "Capital of France?", "choices": ["Rome", "Paris"], "target": "B",'
        ' "metadata": {"source": "quiz"}}\n'
        '{"id": "es", "input": "What is the capital of Spain?", "target": "Madrid"}\n',
    )
    write(tmp_path, "samples.csv", "id,input,target\nfr,capital of France?,Paris\nes,capital of Spain?,Madrid\n")
    write(tmp_path, "samples.json", '[{"id": "fr", "input": "France?", "target": "Paris"}]')
    kept, plan = run_targets(tmp_path, ["samples.jsonl", "samples.csv", "samples.json"])
    by_id = kept.by_id()
    assert {key: result.outcome for key, result in by_id.items()} == {
        "samples.jsonl::dataset[fr]": "passed",
        "samples.jsonl::dataset[chat]": "passed",
        "samples.jsonl::dataset[mc]": "passed",
        "samples.jsonl::dataset[es]": "failed",
        "samples.csv::dataset[fr]": "passed",
        "samples.csv::dataset[es]": "failed",
        "samples.json::dataset[fr]": "passed",
    }
    assert by_id["samples.jsonl::dataset[mc]"].metadata == {"source": "quiz"}
    mc = by_id["samples.jsonl::dataset[mc]"].assertions[0]
    assert mc.name.startswith("includes(/(?i)ANSWER") and mc.state == "passed"
    sent = [e.text for e in by_id["samples.jsonl::dataset[chat]"].events if e.type == "message" and e.role == "user"]
    assert sent == ["Hi", "And France?"]  # the user messages, in turn; not the system message
    assert any("chat input: the user messages are sent in turn" in note for note in plan.notes)


def test_a_ragged_csv_row_is_an_error_at_its_line_and_the_other_rows_run(tmp_path: Path) -> None:
    write(tmp_path, "samples.csv", "id,input,target\nfr,France?,Paris\nbad,France?\nes,Spain?,Madrid,extra\n")
    plan, errors = plan_of(tmp_path, ["samples.csv"])
    assert [e.id for e in plan.evals] == ["samples.csv::dataset[fr]"]
    assert errors[0].startswith("samples.csv:3: this row has 2 cells, the header 3; add the missing cells")
    assert errors[1].startswith("samples.csv:4: this row has more cells than the header's 3; quote cells")


def test_malformed_yaml_names_the_line_and_column(tmp_path: Path) -> None:
    write(tmp_path, "promptfooconfig.yaml", "prompts: ['{{q}}']\ntests:\n  - vars: {q: [unclosed}\n")
    with pytest.raises(CaseError, match=r"promptfooconfig\.yaml:3: not valid YAML, column \d+: "):
        list(iter_cases("promptfooconfig.yaml", eval_file=tmp_path / "x.py", root=tmp_path))


def test_niceeval_import_writes_a_module_that_gives_the_same_verdicts(tmp_path: Path) -> None:
    from niceeval._eval.importing import import_suite

    write(tmp_path, "promptfooconfig.yaml", PROMPTFOO)
    write(tmp_path, "prompts/terse.txt", "Capital of {{country}} ({{style}}):")
    write(tmp_path, "capitals.yaml", PYDANTIC_EVALS)
    write(
        tmp_path,
        "samples.jsonl",
        '{"id": "fr", "input": [{"role": "user", "content": "France?"}], "target": "paris"}\n'
        '{"id": "mc", "input": "Capital of France?", "choices": ["Rome", "Paris"], "target": "B"}\n'
        '{"id": "es", "input": "What is the capital of Spain?", "target": "Madrid"}\n',
    )
    for name in ("promptfooconfig.yaml", "capitals.yaml", "samples.jsonl"):
        imported = import_suite(tmp_path / name, tmp_path)
        assert imported.problems == []
        module = tmp_path / "evals" / f"{Path(name).stem}.py"
        write(tmp_path, f"evals/{module.name}", imported.code)
        direct = {
            key.split("::")[1].split("[", 1)[1]: r.outcome
            for key, r in run_targets(tmp_path, [name])[0].by_id().items()
        }
        coded = {
            key.split("::")[1].split("[", 1)[1]: r.outcome
            for key, r in run_targets(tmp_path, [f"evals/{module.name}"])[0].by_id().items()
        }
        assert coded == direct, name
        assert "failed" in direct.values() and "passed" in direct.values()
