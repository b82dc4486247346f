"""Reporters render finished runs faithfully, and untrusted text cannot break their output."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console

from niceeval._core.assertion import AssertionResult
from niceeval._core.errors import ErrorInfo
from niceeval._core.results import RunResult
from niceeval._core.summary import EvalTally, PlannedEval, SuiteSummary
from niceeval.report import ConsoleReporter, JsonReporter, JUnitReporter, Reporter, ReporterSet

HOSTILE = "[bold red]pwn[/] \x1b[2J\x1b[31mred\x00 ]]> </testcase> <script>alert(1)</script>"


def miss(name: str, severity: str = "gate", actual: str | None = None) -> AssertionResult:
    return AssertionResult.model_validate(
        dict(
            name=name,
            severity=severity,
            score=0.0,
            threshold=1.0,
            state="failed",
            reason="nope",
            actual=actual,
            location="evals/x.py:3",
            expected="something",
        )
    )


def result(eval_id: str, outcome: str, *, index: int = 0, **extra: object) -> RunResult:
    return RunResult.model_validate(
        dict(eval_id=eval_id, file="evals/x.py", line=1, run_index=index, outcome=outcome, duration_s=0.5, **extra)
    )


def drive(reporter: Reporter, runs: list[RunResult], *, strict: bool = False, n_runs: int = 1) -> SuiteSummary:
    ids = list(dict.fromkeys(r.eval_id for r in runs))
    plan = [PlannedEval(id=i, file="evals/x.py", line=1, runs=n_runs) for i in ids]
    tallies = {p.id: EvalTally(eval=p) for p in plan}
    reporter.start(plan, [])
    for run in runs:
        tallies[run.eval_id].add(run)
        reporter.run_finished(run)
    summary = SuiteSummary.of(list(tallies.values()), problems=[], duration_s=1.25, strict=strict, min_pass_rate=1.0)
    reporter.finish(summary)
    return summary


def console_output(runs: list[RunResult], **kwargs: object) -> str:
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=False, color_system=None)
    drive(ConsoleReporter(console), runs, **kwargs)  # type: ignore[arg-type]
    return out.getvalue()


def test_console_prints_one_line_per_eval_and_a_summary() -> None:
    text = console_output([result("a::ok", "passed"), result("a::bad", "failed", assertions=[miss("includes('x')")])])
    assert " PASS   a::ok  0.50s" in text
    assert " FAIL   a::bad  0.50s" in text
    assert "✗ includes('x') [gate] score 0.00 < 1.00  evals/x.py:3" in text
    assert text.rstrip().endswith("1 passed, 0 scored, 1 failed, 0 skipped (2 evals, 2 runs) in 1.25s")


def test_console_shows_soft_misses_of_scored_evals() -> None:
    text = console_output([result("a::soft", "scored", assertions=[miss("similarity", "soft")])])
    assert " SCORED a::soft" in text and "~ similarity [soft]" in text


def test_console_reports_pass_rate_over_runs() -> None:
    runs = [result("a::flaky", "passed", index=0), result("a::flaky", "failed", index=1)]
    assert "1/2 runs passed (50%)" in console_output(runs, n_runs=2)


def test_console_never_interprets_model_output() -> None:
    text = console_output([result("a::x", "failed", assertions=[miss("m", actual=HOSTILE)])])
    assert "\x1b" not in text
    assert "[bold red]pwn[/]" in text
    assert "\\x1b[2J" in text


def test_json_report_groups_runs_per_eval_in_plan_order(tmp_path: Path) -> None:
    path = tmp_path / "out" / "report.json"
    runs = [
        result("b::two", "passed", index=1),
        result("a::one", "failed", error=ErrorInfo(type="E", message=HOSTILE)),
        result("b::two", "scored", index=0, assertions=[miss("sim", "soft")]),
    ]
    drive(JsonReporter(path), runs, n_runs=2)
    doc = json.loads(path.read_text())
    assert doc["schema_version"] == 1
    assert [e["id"] for e in doc["evals"]] == ["b::two", "a::one"]
    assert [r["run_index"] for r in doc["evals"][0]["runs"]] == [0, 1]
    assert doc["evals"][0]["pass_rate"] == 1.0
    assert doc["evals"][1]["runs"][0]["error"]["message"] == HOSTILE
    assert doc["summary"]["failed"] == 1
    assert set(doc["evals"][0]["runs"][0]["assertions"][0]) >= {
        "name",
        "severity",
        "score",
        "threshold",
        "state",
        "reason",
        "location",
    }


def test_junit_maps_outcomes_and_survives_hostile_text(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    runs = [
        result("a::ok", "passed"),
        result("a::bad", "failed", assertions=[miss("m", actual=HOSTILE)]),
        result("a::soft", "scored", assertions=[miss("s", "soft")]),
        result("a::skip", "skipped", skip_reason="later"),
    ]
    drive(JUnitReporter(path), runs)
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["bad"].find("failure") is not None
    assert "pwn" in (cases["bad"].find("failure").text or "")  # type: ignore[union-attr]
    assert cases["soft"].find("failure") is None
    assert cases["skip"].find("skipped") is not None
    assert suite.get("failures") == "1" and suite.get("skipped") == "1"


def test_junit_scored_is_a_failure_under_strict(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    drive(JUnitReporter(path, strict=True), [result("a::soft", "scored", assertions=[miss("s", "soft")])], strict=True)
    case = ET.parse(path).getroot().find("testsuite/testcase")
    assert case is not None and case.find("failure") is not None


class Exploding:
    """Fails on the run of `a::bad` only (as a full disk would, for a while)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.finished = False

    def start(self, plan: object, problems: object) -> None: ...

    def run_finished(self, result: RunResult) -> None:
        if result.eval_id == "a::bad":
            raise RuntimeError("disk full")
        self.seen.append(result.eval_id)

    def finish(self, summary: SuiteSummary) -> None:
        self.finished = True


def test_a_reporter_failing_on_one_run_keeps_the_others_and_still_finishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken, path = Exploding(), tmp_path / "r.json"
    runs = [result("a::ok", "passed"), result("a::bad", "passed"), result("a::two", "passed")]
    drive(ReporterSet([broken, JsonReporter(path)]), runs)
    assert broken.seen == ["a::ok", "a::two"] and broken.finished
    assert len(json.loads(path.read_text())["evals"]) == 3
    err = capsys.readouterr().err
    assert "reporter Exploding failed on a run and left it out: RuntimeError: disk full" in err
    assert "reporter Exploding left out 1 run(s)" in err


class ExitsOnStart:
    def start(self, plan: object, problems: object) -> None:
        raise SystemExit(1)

    def run_finished(self, result: RunResult) -> None:
        raise AssertionError("a dropped reporter must not be called again")

    def finish(self, summary: SuiteSummary) -> None:
        raise AssertionError("a dropped reporter must not be called again")


def test_a_reporter_that_exits_is_dropped_and_the_others_go_on(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    drive(ReporterSet([ExitsOnStart(), JsonReporter(path)]), [result("a::ok", "passed")])
    assert len(json.loads(path.read_text())["evals"]) == 1
