"""A reporter reads the running tally its plan's owner shares (`Plan.tally`: a stored run's replay) instead of
counting each run again; under a plan that shares none it counts its own (`ReporterTallies`)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from io import StringIO
from pathlib import Path

from rich.console import Console

from niceeval import RunResult
from niceeval._core.suite_totals import SuiteTotals
from niceeval._core.summary import EvalTally, Plan, PlannedEval, ReporterTallies, SuiteSummary
from niceeval.report import ConsoleReporter, JUnitReporter
from niceeval.report.github import GitHubOptions, GitHubReporter

TWICE = PlannedEval(id="evals/x.py::twice", file="evals/x.py", line=3, runs=2)


def _run(outcome: str, run_index: int = 0, eval_id: str = TWICE.id) -> RunResult:
    return RunResult.model_validate(
        {"eval_id": eval_id, "file": "evals/x.py", "line": 3, "outcome": outcome, "run_index": run_index,
         "duration_s": 0.5}
    )  # fmt: skip


class _Owner:
    """What a replay keeps: a tally per eval under way, each run counted in it before the reporters get it."""

    def __init__(self, plan: list[PlannedEval]) -> None:
        self.records = {p.id: p for p in plan}
        self.tallies: dict[str, EvalTally] = {}
        self.plan = Plan(lambda: iter(plan), len(plan), self.records.get, tallies=self.tallies.get)

    def count(self, result: RunResult) -> None:
        tally = self.tallies.setdefault(result.eval_id, EvalTally(eval=self.records[result.eval_id]))
        tally.add(result)


def _summary() -> SuiteSummary:
    return SuiteSummary(totals=SuiteTotals(strict=False, min_pass_rate=1.0, planned=1), problems=[], duration_s=1.0)


def test_a_shared_tally_is_read_as_it_is_and_never_counted_again() -> None:
    owner = _Owner([TWICE])
    tallies = ReporterTallies(owner.plan, lambda result: None)
    first, second = _run("passed"), _run("failed", 1)
    owner.count(first)
    assert tallies.add(first) is owner.tallies[TWICE.id]
    owner.count(second)
    assert tallies.add(second) is owner.tallies[TWICE.id]
    assert (owner.tallies[TWICE.id].passed, owner.tallies[TWICE.id].failed) == (1, 1)  # each run counted once
    assert dict(tallies) == {TWICE.id: owner.tallies[TWICE.id]}
    tallies.written(TWICE.id)
    assert dict(tallies) == {}


def test_under_a_plan_at_hand_a_reporter_counts_its_own_and_leaves_out_what_it_is_told() -> None:
    tallies = ReporterTallies(Plan.of([TWICE]), lambda result: None)
    tally = tallies.add(_run("passed"))
    assert tally is not None
    assert tallies.add(_run("scored", 1)) is tally
    assert (tally.passed, tally.scored, tally.done) == (1, 1, 2)
    assert tallies.add(_run("passed", eval_id="evals/x.py::stray")) is None  # the plan does not name it
    assert list(tallies) == [TWICE.id]


def test_the_console_prints_an_eval_from_the_shared_tally() -> None:
    owner = _Owner([TWICE])
    out = StringIO()
    reporter = ConsoleReporter(Console(file=out, force_terminal=False, width=200))
    reporter.start(owner.plan, [])
    for result in (_run("passed"), _run("passed", 1)):
        owner.count(result)
        reporter.run_finished(result)
    assert reporter._tallies == {}
    assert owner.tallies[TWICE.id].done == 2
    assert f"{TWICE.id}  2/2 runs passed (100%)" in out.getvalue()


def test_a_run_the_shared_plan_does_not_name_is_counted_by_the_junit_reporter_itself(tmp_path: Path) -> None:
    owner = _Owner([TWICE])
    path = tmp_path / "junit.xml"
    reporter = JUnitReporter(path)
    reporter.start(owner.plan, [])
    for result in (_run("passed"), _run("failed", 1)):
        owner.count(result)
        reporter.run_finished(result)
    reporter.run_finished(_run("passed", eval_id="evals/x.py::stray"))  # no tally shared for it
    reporter.finish(_summary())
    cases = {(c.get("name"), c.find("failure") is not None) for c in ET.parse(path).getroot().iter("testcase")}
    assert cases == {("twice[run 1]", False), ("twice[run 2]", True), ("stray", False)}


def test_the_github_reporter_annotates_an_eval_failed_by_the_shared_tally(tmp_path: Path) -> None:
    owner = _Owner([TWICE])
    out = StringIO()
    reporter = GitHubReporter(GitHubOptions(out=out, summary_path=None, workspace=tmp_path, cwd=tmp_path))
    reporter.start(owner.plan, [])
    for result in (_run("passed"), _run("failed", 1)):
        owner.count(result)
        reporter.run_finished(result)
    assert owner.tallies[TWICE.id].done == 2
    assert reporter._tallies == {}  # written when its last run came, before `finish`
    reporter.finish(_summary())
    assert "::error title=niceeval evals/x.py%3A%3Atwice::failed: " in out.getvalue()
