"""Judge calibration: agreement, Cohen's kappa, confusion matrix, disagreements, the overfit warning, and
`niceeval calibrate` over the example project (offline, the local server as model and judge)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from niceeval._core.assertion import AssertionResult, JudgeCall
from niceeval._core.results import RunResult
from niceeval.report.calibration import Agreement, CalibrationReporter, Label, overfit_warnings

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "prompt_comparison"


def agreement(pp: int, pf: int, fp: int, ff: int) -> Agreement:
    """(label, judge) counts: pass/pass, pass/fail, fail/pass, fail/fail."""
    row = Agreement(split="golden", model="m")
    row.matrix = {("pass", "pass"): pp, ("pass", "fail"): pf, ("fail", "pass"): fp, ("fail", "fail"): ff}
    return row


def test_agreement_is_the_share_of_verdicts_that_match_the_label() -> None:
    assert agreement(4, 1, 1, 4).agreement == 0.8


def test_kappa_discounts_the_agreement_expected_by_chance() -> None:
    # 20 verdicts, label pass 10, judge pass 15: chance agreement 0.5 * 0.75 + 0.5 * 0.25 = 0.5
    row = agreement(9, 1, 6, 4)
    assert row.agreement == pytest.approx(0.65)
    assert row.kappa == pytest.approx((0.65 - 0.5) / 0.5)


def test_kappa_is_undefined_when_both_raters_always_say_the_same() -> None:
    assert agreement(5, 0, 0, 0).kappa is None


def test_a_holdout_more_than_ten_points_under_golden_warns_of_overfitting() -> None:
    golden, holdout = agreement(5, 0, 0, 5), agreement(4, 1, 1, 4)
    holdout.split = "holdout"
    (warning,) = overfit_warnings([golden, holdout])
    assert "holdout agreement 80% is 20 points under golden 100%" in warning
    close = agreement(9, 1, 0, 10)
    close.split = "holdout"
    assert overfit_warnings([golden, close]) == []


def run_with_verdict(eval_id: str, state: str, model: str = "openai/judge") -> RunResult:
    call = JudgeCall(model=model, reason="looked fine")
    verdict = AssertionResult(
        name="rubric(x)", severity="soft", score=None if state == "inconclusive" else 1.0, threshold=0.0,
        state=state, reason="looked fine", judge_calls=[call],  # type: ignore[arg-type]
    )
    return RunResult(eval_id=eval_id, file="e.py", line=1, outcome="passed", duration_s=0.0, assertions=[verdict])


def test_the_reporter_counts_verdicts_per_split_and_model_and_keeps_disagreements_with_reasons() -> None:
    labels = {"a": Label(expected="pass", split="golden"), "b": Label(expected="fail", split="golden"),
              "c": Label(expected="fail", split="holdout")}
    reporter = CalibrationReporter(labels)
    for result in (run_with_verdict("a", "passed"), run_with_verdict("b", "passed"),
                   run_with_verdict("c", "inconclusive"), run_with_verdict("unlabelled", "failed")):
        reporter.run_finished(result)
    golden, holdout = reporter.rows()
    assert (golden.split, golden.count("pass", "pass"), golden.count("fail", "pass")) == ("golden", 1, 1)
    (miss,) = golden.disagreements
    assert (miss.eval_id, miss.expected, miss.said, miss.reason) == ("b", "fail", "pass", "looked fine")
    assert (holdout.decided, holdout.inconclusive, holdout.agreement) == (0, 1, None)


def calibrate(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "niceeval.cli", "calibrate", *args], cwd=project, capture_output=True, text=True,
        timeout=120, env=env,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    copy = tmp_path / "prompt_comparison"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns(".niceeval", "__pycache__"))
    return copy


@pytest.mark.slow
def test_calibrate_reports_each_split_and_warns_when_holdout_lags(project: Path) -> None:
    done = calibrate(project, "calibration/", "--json", "report.json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "golden · openai/gpt-5-mini: agreement 100% over 6 verdicts, kappa 1.00" in done.stdout
    assert "holdout · openai/gpt-5-mini: agreement 67% over 6 verdicts, kappa 0.33" in done.stdout
    assert "judge_agrees[h-brazil]: labelled fail, judge said pass: the answer names Brasilia" in done.stdout
    assert "WARNING openai/gpt-5-mini: holdout agreement 67% is 33 points under golden 100%" in done.stdout
    report = json.loads((project / "report.json").read_text())
    assert [row["split"] for row in report["rows"]] == ["golden", "holdout"]
    assert "calibration stored as suite run" in done.stdout


@pytest.mark.slow
def test_calibrate_split_runs_only_that_split_and_is_stored_as_a_calibrate_run(project: Path) -> None:
    done = calibrate(project, "calibration/", "--split", "holdout")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "holdout ·" in done.stdout and "golden ·" not in done.stdout
    from niceeval.store import Store

    with Store.open(str(project / ".niceeval" / "results.db"), root=project) as store:
        (run,) = store.runs()
        assert run.kind == "calibrate"


@pytest.mark.slow
def test_calibrate_without_labelled_cases_says_what_to_add(project: Path) -> None:
    done = calibrate(project, "evals/")
    assert done.returncode == 2
    assert "give cases expected_label: pass|fail" in done.stderr


@pytest.mark.slow
def test_the_example_compares_two_prompts_over_twenty_cases(project: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "niceeval.cli", "run", "--no-store"], cwd=project, capture_output=True, text=True,
        timeout=120, env=env,
    )
    assert done.returncode == 1, done.stdout + done.stderr  # the terse prompt gets 5 capitals wrong
    assert "20 passed, 15 scored, 5 failed, 0 skipped (40 evals, 40 runs)" in done.stdout
    table = done.stdout[done.stdout.index("Variants:"):].splitlines()
    assert table[1].split()[:5] == ["variant", "runs", "pass", "rate", "95%"]
    assert table[2].split()[:7] == ["prompt=careful", "20", "100%", "84%-100%", "1.00±0.00", "1.00±0.00", "1.00±0.00"]
    assert table[3].split()[:4] == ["prompt=terse", "20", "75%", "53%-89%"]
    assert table[3].split()[4:7] == ["0.75±0.10", "0.75±0.10", "0.00±0.00"]
