"""`niceeval run FILE --data ITEMS` and `--fields ROLE=FIELD,...`: how a dataset file named on the command line
is read, through the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from niceeval.cli import main
from niceeval.testing import LLMRequest, LLMServer, Reply

from ._helpers import write
from .test_peers import AGENT

QA = (
    '{"question": "What is the capital of France?", "answer": "Paris", "level": "easy"}\n'
    '{"question": "What is the capital of Spain?", "answer": "Madrid", "level": "hard"}\n'
)


@pytest.fixture(autouse=True)
def in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "niceeval.config.py", AGENT)


def run(*argv: str) -> tuple[int, dict[str, str], list[dict[str, object]]]:
    """`niceeval run ... --no-store --jsonl runs.jsonl`: the exit code, each eval's outcome, the suite's problems."""
    code = main(["run", *argv, "--no-store", "--jsonl", "runs.jsonl"])
    events = [json.loads(line) for line in Path("runs.jsonl").read_text().splitlines()]
    outcomes = {e["eval_id"]: e["run"]["outcome"] for e in events if e["event"] == "run.finished"}
    problems = next(e["problems"] for e in events if e["event"] == "suite.started")
    return code, outcomes, problems


def test_fields_name_the_input_and_target_of_sample_rows(tmp_path: Path) -> None:
    write(tmp_path, "qa.jsonl", QA)
    code, outcomes, problems = run("qa.jsonl", "--fields", "input=question,target=answer,metadata=level")
    assert (code, problems) == (1, [])
    assert outcomes == {"qa.jsonl::dataset[0]": "passed", "qa.jsonl::dataset[1]": "failed"}  # "I don't know."


def test_fields_map_names_no_inference_would_guess(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "odd.csv", "ask,gold,key\nCapital of France?,paris,fr\nCapital of Spain?,Madrid,es\n")
    code, outcomes, _ = run("odd.csv", "--fields", "input=ask,target=gold,id=key")
    assert code == 1
    assert outcomes == {"odd.csv::dataset[fr]": "passed", "odd.csv::dataset[es]": "failed"}
    assert "as a task's FieldSpec would map them" not in capsys.readouterr().err  # named, not inferred


def test_fields_name_the_choices_of_a_multiple_choice_row(tmp_path: Path) -> None:
    write(tmp_path, "mc.jsonl", '{"q": "Capital of France?", "options": ["Rome", "Paris"], "letter": "B"}\n')
    _, outcomes, _ = run("mc.jsonl", "--fields", "input=q,choices=options,target=letter")
    assert outcomes == {"mc.jsonl::dataset[0]": "passed"}  # asked as multiple choice, the agent says ANSWER: B


def test_a_row_missing_a_mapped_field_is_that_rows_error_naming_field_and_flag(tmp_path: Path) -> None:
    write(tmp_path, "qa.jsonl", QA + '{"prompt": "What is the capital of Italy?", "answer": "Rome"}\n')
    code, outcomes, problems = run("qa.jsonl", "--fields", "input=question,target=answer")
    assert code == 2
    assert sorted(outcomes) == ["qa.jsonl::dataset[0]", "qa.jsonl::dataset[1]"]  # the other rows ran
    (problem,) = problems
    assert problem["location"] == "qa.jsonl:3"
    message = str(problem["message"])
    assert "no field 'question', which --fields input=question,target=answer names as the input" in message
    assert "this row has answer, prompt" in message


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("input", "takes ROLE=FIELD pairs separated by commas"),
        ("question=input", "role 'question' is not one of input, target, id, choices, metadata"),
        ("input=a,input=b", "names 'input' twice"),
    ],
)
def test_a_bad_fields_value_exits_2_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, said: str
) -> None:
    write(tmp_path, "qa.jsonl", QA)
    with pytest.raises(SystemExit) as exited:
        main(["run", "qa.jsonl", "--no-store", "--fields", value])
    assert exited.value.code == 2
    assert f"--fields {said}" in capsys.readouterr().err


def test_fields_on_a_peers_config_is_refused_for_that_file(tmp_path: Path) -> None:
    write(tmp_path, "capitals.yaml", "cases:\n  - name: fr\n    inputs: France?\n")
    code, outcomes, problems = run("capitals.yaml", "--fields", "input=inputs")
    assert (code, outcomes) == (2, {})
    assert "this file is a pydantic-evals dataset, whose fields are its own: run it without --fields" in str(
        problems[0]["message"]
    )


def test_fields_or_data_with_an_eval_module_or_folder_refuse_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, "evals/smoke.py", "from niceeval import define_eval\n\n\n@define_eval\ndef smoke(t):\n    pass\n")
    write(tmp_path, "items.jsonl", "{}\n")
    assert main(["run", "evals", "--no-store", "--data", "items.jsonl"]) == 2
    assert "--data reads a dataset file named on the command line" in capsys.readouterr().err
    assert main(["run", "evals/smoke.py", "--no-store", "--fields", "input=q"]) == 2
    assert "evals/smoke.py is not one: run eval modules and folders without --fields" in capsys.readouterr().err
    assert main(["run", "--no-store", "--fields", "input=q"]) == 2
    assert "no file is named" in capsys.readouterr().err


def test_data_with_samples_or_two_files_or_no_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, "qa.jsonl", QA)
    write(tmp_path, "more.jsonl", QA)
    code, outcomes, problems = run("qa.jsonl", "--data", "more.jsonl")
    assert (code, outcomes) == (2, {})
    assert "this file is a JSONL dataset, which holds its rows itself: run it without --data" in str(
        problems[0]["message"]
    )
    assert main(["run", "qa.jsonl", "more.jsonl", "--no-store", "--data", "more.jsonl"]) == 2
    assert "--data names the rows of one definition; name one file with it (got 2)" in capsys.readouterr().err
    assert main(["run", "qa.jsonl", "--no-store", "--data", "missing.jsonl"]) == 2
    assert "--data missing.jsonl is not a file" in capsys.readouterr().err


DEFINITION = {
    "name": "capitals",
    "data_source_config": {"type": "custom", "item_schema": {"type": "object"}},
    "testing_criteria": [
        {
            "type": "string_check",
            "name": "names the city",
            "operation": "ilike",
            "input": "{{sample.output_text}}",
            "reference": "{{item.answer}}",
        }
    ],
    "data_source": {
        "type": "completions",
        "model": "gpt-4.1-mini",
        "input_messages": {"type": "template", "template": [{"role": "user", "content": "{{item.question}}"}]},
    },
}


def by_country(request: LLMRequest) -> Reply:
    return Reply(text="Paris" if "France" in request.last_user_text else "Barcelona")


def test_run_takes_an_openai_eval_definitions_items_from_data(
    tmp_path: Path, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    llm_server.set_script(by_country)
    items = [
        {"item": {"question": f"Capital of {c}?", "answer": a}} for c, a in (("France", "Paris"), ("Spain", "Madrid"))
    ]
    write(tmp_path, "capitals.json", json.dumps(DEFINITION))
    write(tmp_path, "capitals.jsonl", json.dumps(items[0]) + "\n")  # beside it: what runs without --data
    write(tmp_path, "exports/items.jsonl", "".join(json.dumps(item) + "\n" for item in items))
    code, outcomes, _ = run("capitals.json", "--data", "exports/items.jsonl")
    assert code == 1
    assert outcomes == {"capitals.json::dataset[0]": "passed", "capitals.json::dataset[1]": "failed"}
    assert sorted(r.last_user_text for r in llm_server.requests) == ["Capital of France?", "Capital of Spain?"]
    code, outcomes, _ = run("capitals.json")
    assert (code, outcomes) == (0, {"capitals.json::dataset[0]": "passed"})


PROMPTFOO = """\
prompts: ['{{country}}: what is its capital?']
tests:
  - vars: {country: Spain}
    assert: [{type: icontains, value: madrid}]
"""


def test_run_takes_a_promptfoo_configs_tests_from_data_as_promptfoos_tests_flag(tmp_path: Path) -> None:
    write(tmp_path, "promptfooconfig.yaml", PROMPTFOO)
    write(tmp_path, "more/tests.csv", "country,__expected\nFrance,icontains:paris\nItaly,icontains:rome\n")
    code, outcomes, _ = run("promptfooconfig.yaml", "--data", "more/tests.csv")
    assert code == 1
    assert outcomes == {"promptfooconfig.yaml::dataset[0]": "passed", "promptfooconfig.yaml::dataset[1]": "failed"}


def test_import_maps_fields_too(tmp_path: Path) -> None:
    write(tmp_path, "qa.jsonl", QA)
    assert main(["import", "qa.jsonl", "--fields", "input=question,target=answer"]) == 0
    module = (tmp_path / "evals" / "qa.py").read_text()
    assert "'input': 'What is the capital of France?'" in module
    assert "{'type': 'icontains', 'value': 'Paris'}" in module
    code, outcomes, _ = run("evals/qa.py")
    assert code == 1
    assert outcomes == {"evals/qa.py::qa[0]": "passed", "evals/qa.py::qa[1]": "failed"}


ORGANS = """\
from niceeval import define_config


def agent(message):
    return "The skin." if "largest organ" in message else "No idea."


config = define_config(agent=agent)
"""


def test_the_fields_example_in_the_migration_guide_runs_as_documented(tmp_path: Path) -> None:
    import re

    page = (Path(__file__).resolve().parents[2] / "docs" / "migrating.md").read_text(encoding="utf-8")
    section = page.split("## Inspect", 1)[1].split("\n## ", 1)[0]
    (block,) = re.finditer(r"```text\n# file: (?P<path>\S+)\n(?P<body>.*?)```", section, re.S)
    write(tmp_path, block["path"], block["body"])
    write(tmp_path, "niceeval.config.py", ORGANS)
    (command,) = [line for line in section.splitlines() if line.startswith("niceeval run biology")]
    code, outcomes, problems = run(*command.split()[2:])
    assert code == 2
    assert outcomes == {"biology.jsonl::dataset[q3]": "passed", "biology.jsonl::dataset[q2]": "failed"}
    assert [p["location"] for p in problems] == ["biology.jsonl:3"]
    assert "no field 'topic', which --fields input=ask,target=gold,id=key,metadata=topic names as the metadata" in str(
        problems[0]["message"]
    )


def test_fields_metadata_joins_the_rows_own_metadata(tmp_path: Path) -> None:
    from niceeval._eval.cases import Loading, iter_cases
    from niceeval._eval.reading import Reading

    write(
        tmp_path,
        "qa.jsonl",
        '{"q": "a?", "level": "easy", "metadata": "{\\"source\\": \\"web\\"}"}\n'
        '{"q": "b?", "level": "hard", "metadata": {"source": "book"}}\n',
    )
    reading = Reading(fields=(("input", "q"), ("metadata", "level")))
    cases = iter_cases("qa.jsonl", eval_file=tmp_path / "qa.jsonl", root=tmp_path, loading=Loading(), reading=reading)
    assert [(c.data["input"], c.metadata) for c in cases] == [
        ("a?", {"source": "web", "level": "easy"}),
        ("b?", {"source": "book", "level": "hard"}),
    ]


def test_the_python_api_takes_fields_and_data_as_the_command_does(tmp_path: Path) -> None:
    import niceeval
    from niceeval._core.errors import UsageError

    write(tmp_path, "qa.jsonl", QA)
    result = niceeval.run("qa.jsonl", fields="input=question,target=answer", store=False)
    assert sorted((r.eval_id, r.outcome) for r in result.runs) == [
        ("qa.jsonl::dataset[0]", "passed"),
        ("qa.jsonl::dataset[1]", "failed"),
    ]
    with pytest.raises(UsageError, match="--fields reads a dataset file named on the command line"):
        niceeval.run(fields="input=question", store=False)


def test_list_reads_a_dataset_file_as_run_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "odd.csv", "ask,gold,key\nCapital of France?,paris,fr\n")
    assert main(["list", "odd.csv", "--fields", "input=ask,target=gold,id=key"]) == 0
    assert capsys.readouterr().out == "odd.csv::dataset[fr]\n"
    assert main(["list", "odd.csv", "--data", "odd.csv"]) == 2
    assert "holds its rows itself" in capsys.readouterr().err


def test_data_with_a_pydantic_evals_dataset_is_refused_for_that_file(tmp_path: Path) -> None:
    write(tmp_path, "capitals.yaml", "cases:\n  - name: fr\n    inputs: France?\n")
    write(tmp_path, "more.yaml", "cases: []\n")
    code, outcomes, problems = run("capitals.yaml", "--data", "more.yaml")
    assert (code, outcomes) == (2, {})
    assert "this file is a pydantic-evals dataset, which holds its rows itself: run it without --data" in str(
        problems[0]["message"]
    )
