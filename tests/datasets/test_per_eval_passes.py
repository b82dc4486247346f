"""What a large suite does once rather than per eval: the eval's file worked out when it is found, and the console
without a terminal never walking the plan for the live bar's total."""

from __future__ import annotations

from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from niceeval._core.summary import Plan, PlannedEval
from niceeval._run.discovery import EvalEntry, discover
from niceeval._run.plan import expand
from niceeval.report import ConsoleReporter

from ._helpers import write

EVAL = """\
from niceeval import define_eval


@define_eval(cases=[{"id": "one"}, {"id": "two"}], variants={"tone": ["a", "b"]})
def qa(t):
    t.check(True)
"""


def test_each_planned_eval_carries_the_file_its_eval_was_found_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "evals/qa.py", EVAL)
    monkeypatch.chdir(tmp_path)
    found = discover(tmp_path, ["evals"])
    plan = expand(found.evals, root=tmp_path)
    assert found.errors == plan.errors == []
    monkeypatch.chdir(tmp_path.parent)  # the file as the eval's id names it: not worked out again per run
    walked = list(plan.evals)
    assert [e.id for e in walked] == [f"evals/qa.py::qa[{c}][tone={v}]" for c in ("one", "two") for v in "ab"]
    assert {e.file for e in walked} == {"evals/qa.py"}
    assert walked[0].spec.file == tmp_path / "evals" / "qa.py"
    assert found.evals[0].file == "evals/qa.py"


def test_an_eval_made_without_a_file_works_its_file_out_from_its_definition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "evals/qa.py", EVAL)
    spec = discover(tmp_path, ["evals"]).evals[0].spec
    monkeypatch.chdir(tmp_path / "evals")
    assert EvalEntry(id="x.py::qa", spec=spec).file == "qa.py"  # relative to the working directory when made
    monkeypatch.chdir(write(tmp_path, "elsewhere/x.txt", "").parent)
    assert EvalEntry(id="x.py::qa", spec=spec).file == str(tmp_path / "evals" / "qa.py")  # not below it: as is


def test_the_console_without_a_terminal_reads_only_the_first_planned_eval() -> None:
    pulled: list[str] = []

    def read() -> Iterator[PlannedEval]:
        for i in range(1_000):
            pulled.append(f"q{i}")
            yield PlannedEval(id=f"evals/qa.py::qa[q{i}]", file="evals/qa.py", line=4, runs=2)

    out = StringIO()
    console = ConsoleReporter(Console(file=out, force_terminal=False, width=200))
    console.start(Plan(read, 1_000, lambda eval_id: None), [])
    assert out.getvalue() == "niceeval · 1,000 evals × 2 runs\n"
    assert pulled == ["q0"]  # the header's runs: the first eval; the live bar's total is summed only on a terminal
