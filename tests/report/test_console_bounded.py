"""`ConsoleReporter(most_evals=N)`: the first N evals, then failed ones up to N failures, the rest counted in a line
(what `niceeval report` prints for a large stored run)."""

from __future__ import annotations

import io

from rich.console import Console

from niceeval._core.assertion import AssertionResult
from niceeval._core.results import RunResult
from niceeval._core.summary import EvalTally, PlannedEval, SuiteSummary
from niceeval.report import ConsoleReporter


def result(eval_id: str, outcome: str) -> RunResult:
    missed = AssertionResult(name="includes('x')", severity="gate", score=0.0, threshold=1.0, state="failed")
    return RunResult.model_validate(
        dict(eval_id=eval_id, file="evals/x.py", line=1, outcome=outcome, duration_s=0.5,
             assertions=[missed] if outcome == "failed" else [])
    )  # fmt: skip


def bounded(outcomes: list[str], most: int | None) -> str:
    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=False, color_system=None)
    runs = [result(f"a::e{n}", outcome) for n, outcome in enumerate(outcomes)]
    plan = [PlannedEval(id=r.eval_id, file="evals/x.py", line=1) for r in runs]
    tallies = [EvalTally(eval=p) for p in plan]
    reporter = ConsoleReporter(console, most_evals=most)
    reporter.start(plan, [])
    for run, tally in zip(runs, tallies, strict=True):
        tally.add(run)
        reporter.run_finished(run)
    reporter.finish(SuiteSummary.of(tallies, problems=[], duration_s=1.25, strict=False, min_pass_rate=1.0))
    return out.getvalue()


def test_past_most_evals_only_failures_are_printed_up_to_as_many_and_the_rest_are_counted() -> None:
    text = bounded(["passed", "failed", "passed", "skipped", "failed", "scored", "failed", "failed"], most=2)
    lines = [line for line in text.splitlines() if line.startswith(" ")]
    assert [line.split()[:2] for line in lines if not line.startswith("   ")] == [
        ["PASS", "a::e0"],
        ["FAIL", "a::e1"],
        ["FAIL", "a::e4"],  # failures go on to 2 in all
    ]
    assert "✗ includes('x') [gate]" in text  # a printed failure keeps its misses
    assert "... 5 more evals not shown (2 failed, 1 scored, 1 passed, 1 skipped): the JSON, JUnit and HTML " in text
    assert text.rstrip().endswith("2 passed, 1 scored, 4 failed, 1 skipped (8 evals, 8 runs) in 1.25s")


def test_a_run_within_most_evals_prints_every_eval_and_no_count() -> None:
    outcomes = ["passed", "failed", "skipped"]
    assert bounded(outcomes, most=3) == bounded(outcomes, most=None)
    assert "not shown" not in bounded(outcomes, most=3)


def test_counts_past_a_thousand_are_written_with_separators() -> None:
    text = bounded(["passed"] * 1_002, most=1)
    assert "... 1,001 more evals not shown (1,001 passed)" in text
