"""Every rate a report shows carries its uncertainty: Wilson per eval, a clustered standard error per suite."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

from rich.console import Console

from niceeval._core.results import RunResult
from niceeval._core.summary import EvalTally, PlannedEval, SuiteSummary
from niceeval.report import ConsoleReporter, JsonReporter, JUnitReporter, Reporter
from niceeval.report._step_summary import StepSummary, render


def run(eval_id: str, outcome: str, index: int = 0, **extra: object) -> RunResult:
    return RunResult.model_validate(
        dict(eval_id=eval_id, file="evals/x.py", line=1, run_index=index, outcome=outcome, duration_s=0.5, **extra)
    )


def drive(
    reporter: Reporter, runs: list[RunResult], n_runs: int, clusters: dict[str, str] | None = None
) -> SuiteSummary:
    ids = list(dict.fromkeys(r.eval_id for r in runs))
    plan = [PlannedEval(id=i, file="evals/x.py", line=1, runs=n_runs, cluster=(clusters or {}).get(i)) for i in ids]
    tallies = {p.id: EvalTally(eval=p) for p in plan}
    reporter.start(plan, [])
    for one in runs:
        tallies[one.eval_id].add(one)
        reporter.run_finished(one)
    summary = SuiteSummary.of(list(tallies.values()), problems=[], duration_s=1.0, strict=False, min_pass_rate=0.5)
    reporter.finish(summary)
    return summary


def eight_of_ten(eval_id: str) -> list[RunResult]:
    return [run(eval_id, "passed" if i < 8 else "failed", i) for i in range(10)]


def console(runs: list[RunResult], n_runs: int, clusters: dict[str, str] | None = None) -> str:
    out = io.StringIO()
    reporter = ConsoleReporter(Console(file=out, width=200, color_system=None), min_pass_rate=0.5)
    drive(reporter, runs, n_runs, clusters)
    return out.getvalue()


def test_console_shows_each_evals_wilson_interval() -> None:
    text = console(eight_of_ten("a::x"), 10)
    assert "8/10 runs passed (80%), 95% CI 49%-94%" in text


def test_console_shows_the_suite_rate_over_cases_before_the_counts() -> None:
    runs = eight_of_ten("a::x") + [run("a::y", "passed", i) for i in range(10)]
    lines = console(runs, 10).splitlines()
    assert lines[-3] == "pass rate 90% (95% CI 35%-99%; standard error 18% over 2 cases)"
    assert lines[-2] == "power: detects a drop of 0.81 in pass rate or more (80% power, alpha 0.05; niceeval power)"
    assert lines[-1].startswith("1 passed, 1 scored")


def test_a_small_suite_gets_wilsons_interval_over_its_cases() -> None:
    """Issue 41: 3 of 6 cases passing (one run each) was `50% (95% CI 0%-100%)`, 5 of 6 `83% (40%-100%)`."""
    half = [run(f"a::c{i}", "passed" if i < 3 else "failed") for i in range(6)]
    assert "pass rate 50% (95% CI 19%-81%; standard error 20% over 6 cases)" in console(half, 1)
    most = [run(f"a::c{i}", "passed" if i < 5 else "failed") for i in range(6)]
    assert "pass rate 83% (95% CI 44%-97%; standard error 15% over 6 cases)" in console(most, 1)
    every = [run(f"a::c{i}", "passed") for i in range(6)]
    assert "pass rate 100% (95% CI 61%-100%; standard error 0% over 6 cases)" in console(every, 1)


def test_a_large_suites_small_standard_error_and_near_certain_rate_keep_their_decimals() -> None:
    # whole percents said `pass rate 100% (95% CI 99%-100%; standard error 0% ...)` for 998 of 1,000 cases
    cases = [run(f"a::c{i}", "passed" if i >= 2 else "failed") for i in range(1000)]
    assert "pass rate 99.8% (95% CI 99.3%-99.9%; standard error 0.1% over 1000 cases)" in console(cases, 1)


def test_the_suite_rate_weighs_each_case_the_same_whatever_its_runs(tmp_path: Path) -> None:
    """Issue 41: 20 of 20, 20 of 20 and 2 of 3 were pooled into 98% (42 of 43 runs)."""
    runs = [run(e, "passed", i) for e in ("a::x", "a::y") for i in range(20)]
    runs += [run("a::z", outcome, i) for i, outcome in enumerate(["passed", "failed", "passed"])]
    path = tmp_path / "r.json"
    drive(JsonReporter(path), runs, 20)
    suite = json.loads(path.read_text())["summary"]["pass_rate"]
    assert round(suite["value"], 4) == 0.8889 and suite["n"] == 43 and suite["clusters"] == 3


def test_one_case_shows_no_suite_interval() -> None:
    assert "pass rate" not in console(eight_of_ten("a::x"), 10)


def test_the_suite_counts_clusters_when_evals_name_one() -> None:
    runs = [run(f"a::q{i}", "passed" if i % 2 else "failed") for i in range(8)]
    clusters = {f"a::q{i}": f"source=doc{i // 4}" for i in range(8)}
    assert "over 8 cases)" in console(runs, 1)
    assert "over 2 clusters)" in console(runs, 1, clusters)


def test_json_report_has_the_interval_of_each_eval_and_the_suite(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    drive(JsonReporter(path), eight_of_ten("a::x") + [run("a::y", "passed", i) for i in range(10)], 10)
    document = json.loads(path.read_text())
    x = document["evals"][0]
    assert (round(x["pass_rate_interval"]["low"], 3), round(x["pass_rate_interval"]["high"], 3)) == (0.49, 0.943)
    suite = document["summary"]["pass_rate"]
    assert suite["value"] == 0.9 and suite["clusters"] == 2 and suite["n"] == 20
    # two cases tell little: their 20 runs count as 2.85 (the design effect of runs that repeat a case)
    assert round(suite["stderr"], 4) == 0.1777
    assert (round(suite["low"], 3), round(suite["high"], 3)) == (0.347, 0.993)


def test_json_variants_carry_clustered_estimates(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    runs = [
        run(f"a::v[{c}][p=x]", "passed" if (c + i) % 3 else "failed", i, variant={"p": "x"}, group=f"a::v[{c}]")
        for c in range(4)
        for i in range(3)
    ]
    drive(JsonReporter(path), runs, 3)
    row = json.loads(path.read_text())["variants"][0]
    assert row["pass_rate_estimate"]["clusters"] == 4 and row["pass_rate_estimate"]["n"] == 12
    assert row["pass_rate_estimate"]["value"] == row["pass_rate"]


def test_junit_has_eval_and_suite_pass_rate_properties(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    runs = eight_of_ten("a::x") + [run("a::y", "passed", i) for i in range(10)]
    drive(JUnitReporter(path, min_pass_rate=0.5), runs, 10)
    root = ET.parse(path).getroot()
    properties = root.find("testsuite/properties")
    assert properties is not None
    suite = {p.get("name"): p.get("value") for p in properties}
    assert suite["pass_rate"] == "0.900000" and suite["pass_rate_clusters"] == "2"
    assert (suite["pass_rate_low"], suite["pass_rate_high"]) == ("0.347227", "0.993476")  # as the JSON report
    case_properties = root.find("testsuite/testcase/properties")
    assert case_properties is not None
    props = {p.get("name"): p.get("value") for p in case_properties}
    assert props["eval.pass_rate_low"] == "0.490162" and props["eval.pass_rate_high"] == "0.943318"


def test_step_summary_shows_the_pass_rate_of_runs_with_its_interval() -> None:
    runs = eight_of_ten("a::x") + [run("a::y", "passed", i) for i in range(10)]
    summary = drive(ConsoleReporter(Console(file=io.StringIO())), runs, 10)
    step = StepSummary(summary=summary, run_id=None, failed_rows=[], failed_total=0, scored_rows=[], scored_total=0)
    text = render(step)
    assert "Pass rate of runs: 90% (95% CI 35%-99%; standard error 18% over 2 cases)" in text


def test_html_report_shows_each_evals_interval_and_the_rate_over_cases(tmp_path: Path) -> None:
    from niceeval.report.html import HtmlReporter

    path = tmp_path / "r.html"
    drive(HtmlReporter(path), eight_of_ten("a::x") + [run("a::y", "passed", i) for i in range(10)], 10)
    page = path.read_text()
    assert "8/10 runs passed (80%), 95% CI 49%-94%" in page
    assert "Pass rate of runs over cases: 90% (95% CI 35%-99%; standard error 18% over 2 cases)" in page
