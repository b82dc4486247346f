"""With --runs N the console prints a miss repeated across runs once, naming the runs it hit."""

from __future__ import annotations

from test_reporters import console_output, miss, result

from niceeval._core.errors import ErrorInfo
from niceeval.report._grouping import runs_text


def test_a_soft_miss_repeated_in_eight_runs_is_printed_once_with_its_runs() -> None:
    runs = [result("a::e", "scored", index=i, assertions=[miss("polite", "soft")]) for i in range(8)]
    out = console_output(runs, n_runs=8)
    assert out.count("~ polite [soft] score 0.00 < 1.00") == 1
    assert "   runs 1-8 (8×): ~ polite [soft]" in out
    assert out.count("reason:") == 1


def test_misses_that_differ_are_printed_apart_each_with_its_runs() -> None:
    runs = [
        result("a::e", "failed", index=i, assertions=[miss("check", actual="A" if i % 2 else "B")]) for i in range(4)
    ]
    out = console_output(runs, n_runs=4)
    assert "runs 1,3 (2×): ✗ check" in out and "runs 2,4 (2×): ✗ check" in out
    assert "actual:   A" in out and "actual:   B" in out


def test_a_miss_in_a_single_run_of_many_names_that_run() -> None:
    runs = [result("a::e", "passed", index=0), result("a::e", "failed", index=1, assertions=[miss("check")])]
    assert "   run 2: ✗ check" in console_output(runs, n_runs=2)


def test_the_same_error_in_several_runs_is_printed_once() -> None:
    error = ErrorInfo(type="ValueError", message="boom", location="evals/x.py:9")
    runs = [result("a::e", "failed", index=i, error=error) for i in range(3)]
    out = console_output(runs, n_runs=3)
    assert out.count("error ValueError: boom") == 1
    assert "runs 1-3 (3×): error ValueError: boom  at evals/x.py:9" in out


def test_run_lists_compress_consecutive_runs_and_stay_short() -> None:
    assert runs_text([0]) == "run 1"
    assert runs_text([0, 1, 2, 4, 6, 7]) == "runs 1-3,5,7-8 (6×)"
    long = runs_text(list(range(0, 400, 2)))
    assert long.endswith(",... (200×)") and len(long) < 80
