"""Outcome folding: many assertion results (and maybe an error or a skip) become one outcome per run."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from niceeval._core.assertion import AssertionResult

Outcome = Literal["passed", "scored", "failed", "skipped"]
OUTCOMES: tuple[Outcome, ...] = ("passed", "scored", "failed", "skipped")


def counts_as_failure(result: AssertionResult, *, fail_on_inconclusive: bool = False) -> bool:
    """True when this result makes its severity's rule fire (a miss, or an unwanted inconclusive)."""
    if result.state == "failed":
        return True
    return result.state == "inconclusive" and fail_on_inconclusive and not result.optional


def fold(
    results: Iterable[AssertionResult],
    *,
    errored: bool = False,
    skipped: bool = False,
    fail_on_inconclusive: bool = False,
    points_short: bool = False,
) -> Outcome:
    """Fold a run into its outcome, in the documented order.

    1. an execution error (exception, timeout, author bug) -> `failed`
    2. any gate not passed -> `failed` (with `fail_on_inconclusive`, any non-optional inconclusive too, whatever
       its severity: the flag exists so that CI never passes on a judge it could not reach)
    3. `t.skip(reason)` -> `skipped`
    4. a score eval whose run earned fewer points than it needs (`points_short`) -> `failed`
    5. a soft below its threshold -> `scored` (a missed check worth points is not one: the points decide)
    6. otherwise -> `passed`
    """
    if errored:
        return "failed"
    soft_missed = False
    for result in results:
        if counts_as_failure(result, fail_on_inconclusive=fail_on_inconclusive):
            if result.severity == "gate" or result.state == "inconclusive":
                return "failed"
            soft_missed = soft_missed or result.points is None
    if skipped:
        return "skipped"
    if points_short:
        return "failed"
    return "scored" if soft_missed else "passed"


def is_success(outcome: Outcome, *, strict: bool) -> bool:
    """Whether one run counts as a pass: `passed`, `skipped`, and `scored` unless `--strict`.

    An eval's verdict over its runs is `EvalTally.status`, which counts runs with this rule.
    """
    if outcome == "failed":
        return False
    return not (strict and outcome == "scored")
