"""Inspect samples and pydantic-evals datasets give their tool's verdicts: each disagreement found on files from
Inspect's and pydantic-ai's own examples is pinned here with a file written for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from niceeval._eval.cases import Loading, iter_cases

from ._helpers import write
from .test_peers import AGENT, outcomes, run_targets


@pytest.fixture(autouse=True)
def in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "niceeval.config.py", AGENT)


def test_a_csv_choices_cell_is_the_choices_separated_by_commas(tmp_path: Path) -> None:
    write(tmp_path, "mc.csv", 'id,input,choices,target\nq1,Capital of France?,"Rome, Paris, Oslo",B\n')
    kept, plan = run_targets(tmp_path, ["mc.csv"])
    assert outcomes(kept) == {"dataset[q1]": "passed"}  # the agent answers "ANSWER: B" to a multiple-choice prompt
    (result,) = kept.results
    assert "A) Rome\nB) Paris\nC) Oslo" in result.events[0].text  # type: ignore[attr-defined]
    assert "mc.csv: Inspect: a `choices` cell is read as choices separated by commas" in plan.notes


def test_a_targets_surrounding_whitespace_is_looked_for_as_includes_does(tmp_path: Path) -> None:
    # Inspect's own popularity.jsonl targets " Yes" / " No": includes() finds " no" only as a word's start, so
    # "I don't know." does not answer " No" (the stripped "no" would be found in "know").
    write(
        tmp_path,
        "samples.jsonl",
        '{"id": "fr", "input": "What is the capital of France?", "target": " Paris"}\n'
        '{"id": "no", "input": "Would you say so?", "target": " No"}\n',
    )
    kept, _ = run_targets(tmp_path, ["samples.jsonl"])
    assert outcomes(kept) == {"dataset[fr]": "passed", "dataset[no]": "failed"}
    assert [a.name for a in kept.by_id()["samples.jsonl::dataset[no]"].assertions] == ["icontains(' No')"]


def test_metadata_written_as_a_json_string_is_read_as_the_object(tmp_path: Path) -> None:
    write(
        tmp_path,
        "samples.jsonl",
        '{"id": "a", "input": "France?", "target": "Paris", "metadata": "{\\"level\\": \\"easy\\"}"}\n'
        '{"id": "b", "input": "Spain?", "target": "Madrid"}\n',
    )
    cases = list(iter_cases("samples.jsonl", eval_file=tmp_path / "x.py", root=tmp_path, loading=Loading()))
    assert [(c.id, c.metadata) for c in cases] == [("a", {"level": "easy"}), ("b", {})]


def test_is_instance_of_a_class_is_not_run_and_says_so(tmp_path: Path) -> None:
    write(
        tmp_path,
        "ranges.yaml",
        """\
        cases:
          - name: tomorrow
            inputs: the whole of tomorrow
        evaluators:
          - IsInstance: TimeRangeBuilderSuccess
          - IsInstance: str
        report_evaluators:
          - ConfusionMatrixEvaluator
        """,
    )
    kept, plan = run_targets(tmp_path, ["ranges.yaml"])
    (result,) = kept.results
    assert [(a.name, a.state) for a in result.assertions] == [
        ("IsInstance(TimeRangeBuilderSuccess) (not run)", "inconclusive"),
        ("is_instance(str)", "passed"),
    ]
    assert result.outcome == "passed"
    assert plan.notes == [
        "ranges.yaml: pydantic-evals: report_evaluators (computed over the whole report, in Python) are not run: "
        "niceeval's report gives pass rates, scores and their intervals per eval and variant",
        "ranges.yaml: pydantic-evals: IsInstance('TimeRangeBuilderSuccess') names a class of your code, which a "
        "reply read as JSON cannot be: not run (check the agent's structured output in an eval module)",
    ]


def test_question_and_answer_fields_are_read_as_a_field_spec_would_map_them(tmp_path: Path) -> None:
    write(
        tmp_path,
        "qa.jsonl",
        '{"id": "fr", "question": "What is the capital of France?", "answer": "Paris"}\n'
        '{"id": "es", "question": "What is the capital of Spain?", "answer": "Madrid"}\n',
    )
    kept, plan = run_targets(tmp_path, ["qa.jsonl"])
    assert outcomes(kept) == {"dataset[fr]": "passed", "dataset[es]": "failed"}
    assert plan.notes[0] == (
        "qa.jsonl: rows have no `input`: `question` is sent and `answer` is the target, as a task's FieldSpec would "
        "map them; rename the fields to input/target to say so"
    )


def test_rows_with_nothing_to_send_are_one_problem_for_the_file(tmp_path: Path) -> None:
    write(tmp_path, "bare.jsonl", "".join(f'{{"id": "r{i}", "text": "t{i}", "label": "x"}}\n' for i in range(3)))
    kept, _ = run_targets(tmp_path, ["bare.jsonl"])
    assert kept.results == []
    assert [f"{p.location}: {p.message}" for p in kept.problems] == [
        "bare.jsonl: 3 rows have no `input` field (the first at line 1, with fields id, label, text), so nothing is "
        "sent to the agent; name the field that holds the question `input` (and the answer `target`), or write an "
        "eval module that sends what it needs and calls t.check_case() (bare.jsonl::dataset: the other cases ran)"
    ]


def test_a_case_whose_only_evaluator_is_custom_is_inconclusive_not_a_silent_pass(tmp_path: Path) -> None:
    # pydantic-ai's own docs (dataset serialization) give a case checked only by `CustomThreshold`.
    write(
        tmp_path,
        "lengths.yaml",
        """\
        cases:
          - name: test_length
            inputs: example
            expected_output: long result
            evaluators:
              - CustomThreshold: {min_length: 5, max_length: 20}
        """,
    )
    kept, plan = run_targets(tmp_path, ["lengths.yaml"])
    (result,) = kept.results
    assert [(a.name, a.state, a.cause) for a in result.assertions] == [
        ("CustomThreshold (not run)", "inconclusive", "not_run")
    ]
    assert "CustomThreshold is an evaluator class of your code" in str(result.assertions[0].reason)
    assert any("evaluator 'CustomThreshold' has no equivalent" in note for note in plan.notes)
