"""Each eval's verdict over its stored runs, from plain rows: what the totals of a suite run and `diff` count."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from niceeval._core.outcome import Outcome
from niceeval._core.summary import EvalTally, PlannedEval


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


def count_verdicts(
    plan: Iterable[Any], outcomes: Iterable[Any], *, strict: bool, min_pass_rate: float
) -> dict[str, Outcome]:
    """Each eval's verdict by the suite run's rule (`strict`, `min_pass_rate`)."""
    return {
        eval_id: tally.status(strict=strict, min_pass_rate=min_pass_rate)
        for eval_id, tally in tallies(plan, outcomes).items()
    }
