"""promptfoo configs give promptfoo's verdicts, case by case: each disagreement found by running promptfoo's own
examples through both tools is pinned here with a config written for it (echo answers with the prompt)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from niceeval._eval.cases import Loading, iter_cases
from niceeval.testing import LLMServer, Reply

from ._helpers import write
from .test_peers import AGENT, outcomes, run_targets


@pytest.fixture(autouse=True)
def in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "niceeval.config.py", AGENT)


def rows(root: Path, name: str = "promptfooconfig.yaml") -> tuple[list[Any], Loading]:
    loading = Loading()
    return [c.data for c in iter_cases(name, eval_file=root / "x.py", root=root, loading=loading)], loading


def test_tests_from_a_csv_file_with_expected_columns(tmp_path: Path) -> None:
    write(tmp_path, "promptfooconfig.yaml", "prompts: ['Say {{city}}']\nproviders: [echo]\ntests: file://tests.csv\n")
    write(
        tmp_path,
        "tests.csv",
        "city,__expected1,__expected2,__description\n"
        "Paris,contains:Paris,not-icontains:rome,paris\n"
        'Rome,icontains:ROME,"contains-any:Milan,Venice",rome\n'
        "Oslo,Say Oslo,,exact\n",
    )
    found, loading = rows(tmp_path)
    assert [r["assert"] for r in found] == [
        [{"type": "contains", "value": "Paris"}, {"type": "not-icontains", "value": "rome"}],
        [{"type": "icontains", "value": "ROME"}, {"type": "contains-any", "value": "Milan,Venice"}],
        [{"type": "equals", "value": "Say Oslo"}],
    ]
    assert loading.problems == []
    kept, _ = run_targets(tmp_path, ["promptfooconfig.yaml"])
    assert outcomes(kept) == {"dataset[paris]": "passed", "dataset[rome]": "failed", "dataset[exact]": "passed"}


def test_file_vars_load_the_file_and_a_glob_gives_one_test_per_file(tmp_path: Path) -> None:
    write(
        tmp_path,
        "promptfooconfig.yaml",
        """\
        prompts: ['Summarise: {{doc}} ({{style}})']
        providers: [echo]
        tests:
          - description: one
            vars: {doc: file://docs/a.txt, style: file://style.txt}
            assert: [{type: contains, value: alpha}]
          - vars: {doc: "file://docs/*.txt", style: short}
            assert: [{type: contains, value: "Summarise: "}]
        """,
    )
    write(tmp_path, "docs/a.txt", "alpha text")
    write(tmp_path, "docs/b.txt", "beta text")
    write(tmp_path, "style.txt", "terse")
    found, _ = rows(tmp_path)
    assert [(r.get("id"), r["input"]) for r in found] == [
        ("one", "Summarise: alpha text (terse)"),
        ("1 (a.txt)", "Summarise: alpha text (short)"),
        ("1 (b.txt)", "Summarise: beta text (short)"),
    ]


def test_a_prompts_file_splits_at_dashes_and_a_chat_prompt_sends_its_messages(tmp_path: Path) -> None:
    write(
        tmp_path,
        "promptfooconfig.yaml",
        "prompts: [file://prompts.txt, file://chat.yaml]\nproviders: [echo]\ntests:\n  - vars: {q: tides}\n",
    )
    write(tmp_path, "prompts.txt", "Explain {{q}}.\n---\nDescribe {{q}} briefly.\n")
    write(
        tmp_path,
        "chat.yaml",
        """\
        - role: system
          content: You are a tutor.
        - role: user
          content: "Teach me {{q}}"
        """,
    )
    kept, plan = run_targets(tmp_path, ["promptfooconfig.yaml"])
    sent = {key.split("prompt=")[1].rstrip("]"): r.events[0].text for key, r in kept.by_id().items()}  # type: ignore[attr-defined]
    assert sent == {
        "0.0": "Explain tides.",
        "0.1": "Describe tides briefly.",
        "1": "You are a tutor.\n\nTeach me tides",
    }
    assert (
        "promptfooconfig.yaml: promptfoo: prompt '1' is a chat prompt: its system and user messages are sent as one"
        in plan.notes
    )


def test_yaml_reads_yes_and_no_as_text_as_promptfoo_does(tmp_path: Path) -> None:
    write(
        tmp_path,
        "promptfooconfig.yaml",
        "prompts: ['Answer {{a}} or {{b}}; {{c}}']\ntests:\n  - vars: {a: Yes, b: no, c: true}\n",
    )
    (row,), _ = rows(tmp_path)
    assert row["input"] == "Answer Yes or no; True"


def test_contains_json_passes_when_any_json_in_the_output_fits(tmp_path: Path) -> None:
    write(
        tmp_path,
        "promptfooconfig.yaml",
        """\
        prompts: ['{{out}}']
        providers: [echo]
        tests:
          - description: second
            vars: {out: 'first {"a": 1} then {"b": 2}'}
            assert: [{type: contains-json, value: {required: [b]}}]
          - description: none
            vars: {out: 'only {"a": 1}'}
            assert: [{type: contains-json, value: {required: [b]}}]
        """,
    )
    kept, _ = run_targets(tmp_path, ["promptfooconfig.yaml"])
    assert outcomes(kept) == {"dataset[second]": "passed", "dataset[none]": "failed"}
    (miss,) = kept.by_id()["promptfooconfig.yaml::dataset[none]"].assertions
    assert miss.reason.startswith("no JSON in the output matches the schema (1 found; the first: ")


def test_a_weight_0_assertion_informs_without_failing_the_test(tmp_path: Path) -> None:
    write(
        tmp_path,
        "promptfooconfig.yaml",
        """\
        prompts: ['hello']
        providers: [echo]
        tests:
          - assert:
              - {type: contains, value: hello}
              - {type: contains, value: goodbye, weight: 0}
        """,
    )
    kept, _ = run_targets(tmp_path, ["promptfooconfig.yaml"])
    (result,) = kept.results
    assert [(a.severity, a.state) for a in result.assertions] == [("gate", "passed"), ("soft", "failed")]
    assert result.outcome == "scored"  # a pass, with the miss shown


def test_numbers_comma_lists_and_javascript_regex_syntax_are_read(tmp_path: Path) -> None:
    write(
        tmp_path,
        "promptfooconfig.yaml",
        """\
        prompts: ['{{out}}']
        providers: [echo]
        tests:
          - vars: {out: "total 24.01 on 2024-2024 in red"}
            assert:
              - {type: contains, value: 24.01}
              - {type: contains-any, value: "blue, red"}
              - {type: regex, value: '(?<year>\\d{4})-\\k<year>'}
              - {type: icontains-all, value: "TOTAL,RED"}
        """,
    )
    kept, _ = run_targets(tmp_path, ["promptfooconfig.yaml"])
    (result,) = kept.results
    assert [a.state for a in result.assertions] == ["passed"] * 4
    assert kept.problems == []


def test_refs_resolve_into_the_config_and_a_bad_ref_says_where(tmp_path: Path) -> None:
    write(
        tmp_path,
        "promptfooconfig.yaml",
        """\
        assertionTemplates:
          saysHi: {type: icontains, value: hi}
        prompts: ['hi {{name}}']
        providers: [echo]
        tests:
          - vars: {name: Ada}
            assert: [{$ref: '#/assertionTemplates/saysHi'}]
        """,
    )
    (row,), _ = rows(tmp_path)
    assert row["assert"] == [{"type": "icontains", "value": "hi"}]
    write(tmp_path, "bad.yaml", "prompts: ['x']\ntests:\n  - assert: [{$ref: '#/assertionTemplates/nope'}]\n")
    _, loading = rows(tmp_path, "bad.yaml")
    assert [str(p) for p in loading.problems] == [
        "bad.yaml: $ref '#/assertionTemplates/nope': the config has nothing at 'assertionTemplates'; check the path"
    ]


def test_long_or_spaced_labels_become_variant_names_and_the_run_goes_on(tmp_path: Path) -> None:
    write(
        tmp_path,
        "promptfooconfig.yaml",
        """\
        prompts:
          - {label: "Concise answer prompt", raw: "Q: {{q}}"}
          - {label: detailed, raw: "Question: {{q}}"}
        providers:
          - echo
          - {id: echo, label: "an echo provider with a label longer than forty characters"}
        tests:
          - vars: {q: why}
            assert: [{type: contains, value: why}]
        """,
    )
    kept, plan = run_targets(tmp_path, ["promptfooconfig.yaml"])
    assert len(kept.results) == 4 and {r.outcome for r in kept.results} == {"passed"}
    assert any("prompt 'Concise answer prompt' is the variant 'Concise-answer-prompt-" in n for n in plan.notes)


def test_an_unrunnable_default_assertion_leaves_every_test_running(tmp_path: Path) -> None:
    write(
        tmp_path,
        "promptfooconfig.yaml",
        """\
        prompts: ['say {{w}}']
        providers: [echo]
        defaultTest:
          assert: [{type: javascript, value: "output.length > 2"}]
          options: {transform: output.trim()}
        tests:
          - vars: {w: yes}
            assert: [{type: contains, value: yes}]
          - vars: {w: no}
            assert: [{type: contains, value: maybe}]
        """,
    )
    kept, plan = run_targets(tmp_path, ["promptfooconfig.yaml"])
    assert outcomes(kept) == {"dataset[0]": "passed", "dataset[1]": "failed"}
    assert [a.state for a in kept.by_id()["promptfooconfig.yaml::dataset[0]"].assertions] == ["inconclusive", "passed"]
    assert "promptfooconfig.yaml: promptfoo: test option 'transform' has no equivalent: ignored" in plan.notes


def test_a_prompts_config_is_listed_as_not_passed_on(tmp_path: Path) -> None:
    write(
        tmp_path,
        "promptfooconfig.yaml",
        "prompts: [{raw: '{{q}}', config: {temperature: 0}}]\ntests: [{vars: {q: a}}]\n",
    )
    _, loading = rows(tmp_path)
    assert loading.notes == ["promptfooconfig.yaml: promptfoo: prompt '0': its config is not passed on"]


@pytest.fixture
def judge_server(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    llm_server.set_script(lambda request: Reply(data={"reason": "fine", "pass": True, "score": 0.9}))
    return llm_server


def test_a_rubric_prompt_from_a_file_or_a_chat_array_grades_llm_rubric(tmp_path: Path, judge_server: LLMServer) -> None:
    write(
        tmp_path,
        "promptfooconfig.yaml",
        """\
        prompts: ['{{q}}']
        providers: [echo]
        defaultTest:
          options:
            provider: openai:gpt-4.1-mini
            rubricPrompt: file://rubric.txt
        tests:
          - vars: {q: hello}
            assert: [{type: llm-rubric, value: is a greeting}]
          - vars: {q: bye}
            options:
              rubricPrompt: >-
                [{"role": "system", "content": "Grade strictly."},
                 {"role": "user", "content": "Output: {{output}} Rubric: {{rubric}}"}]
            assert: [{type: llm-rubric, value: is a farewell}]
        """,
    )
    write(tmp_path, "rubric.txt", "Check {{output}} against: {{rubric}}")
    kept, _ = run_targets(tmp_path, ["promptfooconfig.yaml"])
    assert [str(p) for p in kept.problems] == []
    assert outcomes(kept) == {"dataset[0]": "passed", "dataset[1]": "passed"}
    asked = ["\n".join(str(m.content) for m in r.messages) for r in judge_server.requests]
    assert any("Check <output-" in text and "against: is a greeting" in text for text in asked)
    assert any("Grade strictly.\n\nOutput: <output-" in text and "Rubric: is a farewell" in text for text in asked)
    assert {r.model for r in judge_server.requests} == {"gpt-4.1-mini"}


def test_promptfoos_default_grader_judges_when_nothing_names_a_model(tmp_path: Path, judge_server: LLMServer) -> None:
    write(
        tmp_path,
        "promptfooconfig.yaml",
        "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: hi}\n"
        "    assert: [{type: llm-rubric, value: greets}]\n",
    )
    write(tmp_path, "niceeval.config.py", "from niceeval import define_config\n\nconfig = define_config()\n")
    run_targets(tmp_path, ["promptfooconfig.yaml"])
    assert [r.model for r in judge_server.requests] == ["gpt-5.5-2026-04-23"]
    write(tmp_path, "niceeval.config.py", AGENT)  # the project's judge model wins over promptfoo's default
    run_targets(tmp_path, ["promptfooconfig.yaml"])
    assert [r.model for r in judge_server.requests][1:] == ["judge"]


def test_a_prompt_written_as_a_json_chat_array_sends_its_messages(tmp_path: Path) -> None:
    write(tmp_path, "promptfooconfig.yaml", "prompts: [file://prompt*.txt]\ntests:\n  - vars: {topic: tea}\n")
    write(
        tmp_path,
        "prompts.txt",
        'Tell me about {{topic}}.\n---\n[{"role": "system", "content": "Be brief."},\n'
        ' {"role": "user", "content": "Explain {{topic}}"}]\n',
    )
    found, loading = rows(tmp_path)
    assert found[0]["vars"] == {"topic": "tea"}
    assert (
        "promptfooconfig.yaml: promptfoo: prompt '0.1' is a chat prompt: its system and user messages are sent as one"
        in loading.notes
    )
    from niceeval._eval.dataset_eval import promptfoo_setup

    prompts, _ = promptfoo_setup(tmp_path / "promptfooconfig.yaml")
    assert prompts is not None and list(prompts["prompt"].values()) == [
        "Tell me about {{topic}}.",
        "Be brief.\n\nExplain {{topic}}",
    ]
