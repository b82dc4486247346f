"""Comparing two suite runs: verdicts that changed, evals new and gone, assertion scores that moved."""

from __future__ import annotations

from sqlalchemy import Connection, func, select

from niceeval._core.outcome import Outcome
from niceeval._core.summary import EvalTally, PlannedEval
from niceeval.store._models import OutcomeChange, RunDiff, ScoreChange
from niceeval.store._schema import assertions, eval_runs, suite_evals, suite_runs

_RANK: dict[Outcome, int] = {"failed": 0, "scored": 1, "passed": 2}


def verdicts(conn: Connection, suite_run_id: str) -> dict[str, Outcome]:
    """Each eval's verdict over its stored runs, by the suite run's own `strict` and `min_pass_rate`."""
    head = conn.execute(
        select(suite_runs.c.strict, suite_runs.c.min_pass_rate).where(suite_runs.c.id == suite_run_id)
    ).one()
    query = select(suite_evals.c.eval_id, suite_evals.c.runs).where(suite_evals.c.suite_run_id == suite_run_id)
    runs = {row.eval_id: row.runs for row in conn.execute(query)}
    tallies: dict[str, EvalTally] = {}
    outcomes = select(eval_runs.c.eval_id, eval_runs.c.outcome).where(eval_runs.c.suite_run_id == suite_run_id)
    for eval_id, outcome in conn.execute(outcomes):
        tally = tallies.get(eval_id)
        if tally is None:
            planned = PlannedEval(id=eval_id, file="", line=0, runs=runs.get(eval_id, 1))
            tally = tallies[eval_id] = EvalTally(eval=planned)
        tally.counts[outcome] += 1
    return {
        eval_id: tally.status(strict=head.strict, min_pass_rate=head.min_pass_rate)
        for eval_id, tally in tallies.items()
    }


def _scores(conn: Connection, suite_run_id: str) -> dict[tuple[str, str], float]:
    query = (
        select(eval_runs.c.eval_id, assertions.c.name, func.avg(assertions.c.score))
        .join(assertions, assertions.c.eval_run_id == eval_runs.c.id)
        .where(eval_runs.c.suite_run_id == suite_run_id, assertions.c.score.is_not(None))
        .group_by(eval_runs.c.eval_id, assertions.c.name)
    )
    return {(eval_id, name): float(score) for eval_id, name, score in conn.execute(query)}


def diff(conn: Connection, base: str, head: str, *, threshold: float = 0.1) -> RunDiff:
    """What changed from suite run `base` to `head`; scores compare per eval and assertion name (mean over runs)."""
    before, after = verdicts(conn, base), verdicts(conn, head)
    changed = []
    for eval_id in sorted(before.keys() & after.keys()):
        old, new = before[eval_id], after[eval_id]
        if old != new:
            worse = old in _RANK and new in _RANK and _RANK[new] < _RANK[old]
            changed.append(OutcomeChange(eval_id=eval_id, base=old, head=new, regressed=worse))
    old_scores, new_scores = _scores(conn, base), _scores(conn, head)
    scores = [
        ScoreChange(eval_id=key[0], assertion=key[1], base=old_scores[key], head=new_scores[key])
        for key in sorted(old_scores.keys() & new_scores.keys())
        if abs(new_scores[key] - old_scores[key]) > threshold + 1e-9
    ]
    return RunDiff(
        base=base,
        head=head,
        threshold=threshold,
        changed=changed,
        new=sorted(after.keys() - before.keys()),
        gone=sorted(before.keys() - after.keys()),
        scores=scores,
    )
