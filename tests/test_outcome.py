"""Outcome folding, in the documented order."""

from __future__ import annotations

from niceeval._core.assertion import AssertionResult, Severity, State
from niceeval._core.outcome import fold, is_success


def a(severity: Severity, state: State, *, optional: bool = False) -> AssertionResult:
    score = {"passed": 1.0, "failed": 0.0, "inconclusive": None}[state]
    return AssertionResult(name="x", severity=severity, score=score, threshold=1.0, state=state, optional=optional)


def test_no_assertions_is_passed() -> None:
    assert fold([]) == "passed"


def test_an_execution_error_fails_even_when_every_assertion_passed() -> None:
    assert fold([a("gate", "passed")], errored=True) == "failed"


def test_a_gate_miss_fails() -> None:
    assert fold([a("gate", "failed"), a("soft", "passed")]) == "failed"


def test_a_gate_miss_wins_over_skip() -> None:
    assert fold([a("gate", "failed")], skipped=True) == "failed"


def test_skip_wins_over_a_soft_miss() -> None:
    assert fold([a("soft", "failed")], skipped=True) == "skipped"


def test_soft_below_threshold_is_scored() -> None:
    assert fold([a("gate", "passed"), a("soft", "failed")]) == "scored"


def test_inconclusive_counts_as_passed() -> None:
    assert fold([a("gate", "inconclusive"), a("soft", "inconclusive")]) == "passed"


def test_fail_on_inconclusive_fails_the_eval_whatever_the_severity() -> None:
    assert fold([a("gate", "inconclusive")], fail_on_inconclusive=True) == "failed"
    assert fold([a("soft", "inconclusive")], fail_on_inconclusive=True) == "failed"


def test_optional_inconclusive_never_counts_against_the_eval() -> None:
    assert fold([a("gate", "inconclusive", optional=True)], fail_on_inconclusive=True) == "passed"


def test_scored_passes_ci_unless_strict() -> None:
    assert is_success("scored", strict=False)
    assert not is_success("scored", strict=True)
    assert not is_success("failed", strict=False)
    assert is_success("skipped", strict=True)
