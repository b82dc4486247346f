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


def test_a_target_is_compared_without_its_surrounding_whitespace(tmp_path: Path) -> None:
    write(tmp_path, "samples.jsonl", '{"id": "fr", "input": "What is the capital of France?", "target": " Paris\\n"}\n')
    kept, _ = run_targets(tmp_path, ["samples.jsonl"])
    assert outcomes(kept) == {"dataset[fr]": "passed"}
    assert [a.name for a in kept.results[0].assertions] == ["icontains('Paris')"]


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
