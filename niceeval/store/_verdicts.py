"""Each eval's verdict over its stored runs: what the totals of a suite run, its kept tallies and `diff` count.

A suite run's verdicts are counted in SQL: its eval runs summed per eval (`OUTCOME_SUMS`, grouped by eval), those
sums grouped again by their values, and each distinct set of counts judged once by `EvalTally.status`, the one
rule. The process holds a row per distinct set of counts (a handful), never one per eval. `tallies` folds plain
rows in Python, for `diff`'s runs of two suite runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from niceeval._core.outcome import Outcome
from niceeval._core.summary import EvalTally, PlannedEval
from niceeval.store._driver import Session

_INFRA = "(e.outcome = 'failed' AND coalesce(e.failure_class, '') = 'infra')"
"""An eval run (`e`) that failed for `infra`: counted as `failed`, left out of the pass rate."""
OUTCOME_SUMS = (
    "sum(CASE WHEN e.outcome = 'passed' THEN 1 ELSE 0 END) AS passed, "
    "sum(CASE WHEN e.outcome = 'scored' THEN 1 ELSE 0 END) AS scored, "
    "sum(CASE WHEN e.outcome = 'failed' THEN 1 ELSE 0 END) AS failed, "
    "sum(CASE WHEN e.outcome = 'skipped' THEN 1 ELSE 0 END) AS skipped, "
    f"sum(CASE WHEN e.outcome = 'skipped' OR {_INFRA} THEN 0 ELSE 1 END) AS counted"
)
"""An eval's runs (`e`, grouped by eval) by outcome, and those its pass rate counts (`EvalTally.count_run`)."""
_VERDICT_COUNTS = (
    "SELECT g.passed, g.scored, g.failed, g.skipped, g.counted, count(*) FROM ("
    f"SELECT {OUTCOME_SUMS} FROM eval_runs e WHERE e.suite_run_id = ? GROUP BY e.eval_id"
    ") g GROUP BY g.passed, g.scored, g.failed, g.skipped, g.counted"
)


_ANY_EVAL = PlannedEval(id="", file="", line=0)
"""What `verdict` judges: the rule reads the counts alone."""


def verdict(counts: tuple[int, int, int, int, int], *, strict: bool, min_pass_rate: float) -> Outcome:
    """The verdict of an eval whose runs are `counts`: `(passed, scored, failed, skipped, counted)`, `counted`
    being the runs neither skipped nor failed for `infra` (`EvalTally.status`)."""
    passed, scored, failed, skipped, counted = counts
    infra = passed + scored + failed - counted
    tally = EvalTally(eval=_ANY_EVAL, passed=passed, scored=scored, failed=failed, skipped=skipped, infra=infra)
    return tally.status(strict=strict, min_pass_rate=min_pass_rate)


class Judged(NamedTuple):
    """A distinct set of an eval's counts in a suite run, its verdict, and how many evals have those counts."""

    counts: tuple[int, int, int, int, int]
    """`(passed, scored, failed, skipped, counted)`."""
    verdict: Outcome
    evals: int


def judged_counts(session: Session, suite_run_id: str, *, strict: bool, min_pass_rate: float) -> list[Judged]:
    """Each distinct set of counts among a suite run's evals with a stored run, judged by the rule `strict`,
    `min_pass_rate`."""
    found = []
    for *counts, evals in session.execute(_VERDICT_COUNTS, (suite_run_id,)).fetchall():
        passed, scored, failed, skipped, counted = (int(n) for n in counts)
        judged = (passed, scored, failed, skipped, counted)
        found.append(Judged(judged, verdict(judged, strict=strict, min_pass_rate=min_pass_rate), int(evals)))
    return found


def count_verdicts(session: Session, suite_run_id: str, *, strict: bool, min_pass_rate: float) -> dict[str, int]:
    """How many of a suite run's evals with a stored run got each verdict, by the rule `strict`, `min_pass_rate`."""
    found: dict[str, int] = dict.fromkeys(("passed", "scored", "failed", "skipped"), 0)
    for judged in judged_counts(session, suite_run_id, strict=strict, min_pass_rate=min_pass_rate):
        found[judged.verdict] += judged.evals
    return found


def tallies(plan: Iterable[Any], outcomes: Iterable[Any]) -> dict[str, EvalTally]:
    """Each eval's tally, from its plan rows `(eval_id, runs, cluster)` and its runs' `(eval_id, outcome,
    failure_class)` (an `infra` failure is left out of the pass rate)."""
    planned = {row[0]: (row[1], row[2]) for row in plan}
    found: dict[str, EvalTally] = {}
    for eval_id, outcome, failure in outcomes:
        tally = found.get(eval_id)
        if tally is None:
            runs, cluster = planned.get(eval_id, (1, None))
            tally = found[eval_id] = EvalTally(
                eval=PlannedEval(id=eval_id, file="", line=0, runs=runs, cluster=cluster)
            )
        tally.count_run(outcome, failure)
    return found
