"""Each eval's scores in a suite run, summed per assertion: what `diff` and `exp compare` weigh a side's scores by.

A running suite run's are summed from its assertions at each read (`_SUMS`, one `GROUP BY` over them in SQL). A
closed one's are kept (`eval_scores`) when it closes, by the same `GROUP BY` in the transaction that keeps its
tallies (`Connection._keep_tallies`, the last shard's `finish_shard`, migration 0020_diff for the runs closed
before it), so a diff of two closed runs of 100,000 evals reads the kept rows instead of grouping the 400,000
assertions under each side again. A suite run has kept scores exactly when it has a kept tally (`suite_tallies`):
a resume's reopening drops the tally, and a store too full to take them leaves a closed run with neither. A run
that carried its attempts from another keeps the scores of the records it carried; `niceeval gc` keeps a run's
scores again when it deletes a run whose records it carried (`keep_again`), so kept and summed stay the same.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection

from niceeval.store._driver import Session, session_of

ScoreSums = list[tuple[str, str | None, str, float, int, int]]
"""Per eval and assertion (key, name): the sum and count of its scores over the eval's runs, and whether it is
graded (1: soft, or scoring between 0 and 1 at least once; else 0)."""

_SUMMED = (
    "sum(a.score), count(a.score), max(CASE WHEN a.severity != 'gate' OR (a.score != 0.0 AND a.score != 1.0) "
    "THEN 1 ELSE 0 END) FROM eval_runs slot JOIN eval_runs record "
    "ON record.suite_run_id = coalesce(slot.carried_from, slot.suite_run_id) AND record.eval_id = slot.eval_id "
    "AND record.run_index = coalesce(slot.carried_index, slot.run_index) "
    "JOIN assertions a ON a.eval_run_id = record.id WHERE slot.suite_run_id = ? AND a.score IS NOT NULL "
    'GROUP BY slot.eval_id, a."key", a.name'
)
"""A carried attempt's assertions are on the row it carries (`_records.slot_records`); inconclusive verdicts have
no score."""
_SUMS = f'SELECT slot.eval_id, a."key", a.name, {_SUMMED}'
_KEEP = (
    'INSERT INTO eval_scores (suite_run_id, eval_id, "key", name, score_sum, score_count, graded) '
    f'SELECT ?, slot.eval_id, a."key", a.name, {_SUMMED}'
)
_KEPT = 'SELECT eval_id, "key", name, score_sum, score_count, graded FROM eval_scores WHERE suite_run_id = ?'
_HAS_TALLY = "SELECT 1 FROM suite_tallies WHERE suite_run_id = ?"


def score_sums(conn: Connection, suite_run_id: str) -> ScoreSums:
    """A suite run's scores summed per eval and assertion, as the driver returns them (the sum of a float column is
    a float on SQLite and PostgreSQL, a count an int): its kept rows once closed, else summed from its assertions.
    Read by the driver's cursor: 200,000 rows without a result object each."""
    session = session_of(conn)
    kept = session.execute(_HAS_TALLY, (suite_run_id,)).fetchone() is not None
    sums: ScoreSums = session.execute(_KEPT if kept else _SUMS, (suite_run_id,)).fetchall()
    return sums


def keep_scores(session: Session, suite_run_id: str) -> None:
    """Write (again) a closing suite run's score sums, in the caller's transaction (the one keeping its tallies)."""
    session.execute("DELETE FROM eval_scores WHERE suite_run_id = ?", (suite_run_id,))
    session.execute(_KEEP, (suite_run_id, suite_run_id))


def carrying(session: Session, sources: Sequence[str]) -> list[str]:
    """The closed suite runs, other than `sources`, that carried some attempt from one of `sources`."""
    if not sources:
        return []
    found = session.execute(
        "SELECT DISTINCT e.suite_run_id FROM eval_runs e JOIN suite_tallies t ON t.suite_run_id = e.suite_run_id "
        f"WHERE e.carried_from IN ({', '.join('?' * len(sources))})",
        tuple(sources),
    ).fetchall()
    return sorted({str(suite_run_id) for (suite_run_id,) in found} - set(sources))


def keep_again(session: Session, suite_run_ids: Sequence[str]) -> None:
    """Keep these suite runs' score sums again (`niceeval gc` deleted records they carried)."""
    for suite_run_id in suite_run_ids:
        keep_scores(session, suite_run_id)
