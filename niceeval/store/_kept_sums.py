"""What `diff` (and `exp compare`) reads of a suite run per eval, kept when the run closes: each eval's runs by
outcome, its cluster and the agent's cost (`eval_sums`), and its scores summed per assertion (`eval_scores`).

A running suite run's are summed from its eval runs and assertions at each read. A closed one's are kept when it
closes, in the transaction that keeps its tallies (`Connection._keep_tallies`, the last shard's `finish_shard`;
migration 0020_diff for the runs closed before it), by the same SQL sums, so a diff of two closed runs of 100,000
evals reads kept rows instead of grouping each side's 100,000 eval runs and 400,000 assertions again. A suite run
has them exactly when it has a kept tally (`suite_tallies`): a resume's reopening drops the tally, and a store too
full to take them leaves a closed run with neither. A run that carried its attempts from another keeps the scores
of the records it carried; `niceeval gc` keeps a run's scores again when it deletes the run whose records it
carried (`keep_again`), so kept and summed stay the same. The tables have no foreign key (PostgreSQL checks one
row by row, and these are a close's 300,000 rows): gc deletes a run's rows with it (`forget`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from niceeval.store._driver import Session, session_of
from niceeval.store._records import RECORD_ID
from niceeval.store._verdicts import OUTCOME_SUMS

if TYPE_CHECKING:  # the run's writer closes runs through this module and never imports SQLAlchemy
    from sqlalchemy import Connection

ScoreSums = list[tuple[str, str | None, str, float, int, int]]
"""Per eval and assertion (key, name): the sum and count of its scores over the eval's runs, and whether it is
graded (1: soft, or scoring between 0 and 1 at least once; else 0)."""
CountRow = tuple[int, int, int, int, int, str | None]
"""An eval's runs passed, scored, failed, skipped and counted (neither skipped nor failed for `infra`), and its
cluster: `_tallies.Counts` as a plain tuple, 100,000 of them read without building an object each."""
UsageRows = list[tuple[str, int, int, float | None]]
"""Per eval with a run not skipped: those runs, the ones passing by the rule, and the agent's cost summed over them
(None when a model it called had no price)."""

_SUMMED = (
    "sum(a.score), count(a.score), max(CASE WHEN a.severity != 'gate' OR (a.score != 0.0 AND a.score != 1.0) "
    f"THEN 1 ELSE 0 END) FROM eval_runs slot JOIN assertions a ON a.eval_run_id = {RECORD_ID} "
    'WHERE slot.suite_run_id = ? AND a.score IS NOT NULL GROUP BY slot.eval_id, a."key", a.name'
)
"""A carried attempt's assertions are on the row it carries (`_records.RECORD_ID`); inconclusive verdicts have
no score. Each of the run's slots finds its assertions through their index, and a carried one its record through
the eval runs' unique key: the statement reads this run's rows only, whatever the store holds besides."""
_SUMS = f'SELECT slot.eval_id, a."key", a.name, {_SUMMED}'
_KEEP_SCORES = (
    'INSERT INTO eval_scores (suite_run_id, eval_id, "key", name, score_sum, score_count, graded) '
    f'SELECT ?, slot.eval_id, a."key", a.name, {_SUMMED}'
)
_KEPT_SCORES = 'SELECT eval_id, "key", name, score_sum, score_count, graded FROM eval_scores WHERE suite_run_id = ?'

_NOT_SKIPPED = "CASE WHEN e.outcome != 'skipped' THEN {} END"
_KEEP_EVALS = (
    "INSERT INTO eval_sums (suite_run_id, eval_id, planned, cluster, passed, scored, failed, skipped, counted, "
    "agent_cost) SELECT ?, g.eval_id, p.eval_id IS NOT NULL, p.cluster, g.passed, g.scored, g.failed, g.skipped, "
    f"g.counted, g.agent_cost FROM (SELECT e.eval_id, {OUTCOME_SUMS}, "
    f"CASE WHEN count({_NOT_SKIPPED.format('e.agent_cost')}) = sum({_NOT_SKIPPED.format('1')}) "
    f"THEN sum({_NOT_SKIPPED.format('e.agent_cost')}) END AS agent_cost "
    "FROM eval_runs e WHERE e.suite_run_id = ? GROUP BY e.eval_id) g "
    "LEFT JOIN suite_evals p ON p.suite_run_id = ? AND p.eval_id = g.eval_id"
)
"""Each eval with a stored run: its runs by outcome (`OUTCOME_SUMS`, as its tally counts them), whether it was
planned and its cluster (the kept counts are a planned eval's, as the tallies'), and the agent's cost over its runs
not skipped (`_costs.case_usage`' sum, which counts unplanned evals too)."""
_KEPT_COUNTS = (
    "SELECT eval_id, passed, scored, failed, skipped, counted, cluster FROM eval_sums WHERE suite_run_id = ? "
    "AND planned"
)
_KEPT_USAGE = (
    "SELECT eval_id, passed + scored + failed, passed{scored}, agent_cost FROM eval_sums WHERE suite_run_id = ? "
    "AND passed + scored + failed > 0"
)
_HAS_TALLY = "SELECT 1 FROM suite_tallies WHERE suite_run_id = ?"


def _kept(session: Session, suite_run_id: str) -> bool:
    """The suite run closed and its sums were kept with its tally."""
    return session.execute(_HAS_TALLY, (suite_run_id,)).fetchone() is not None


def score_sums(conn: Connection, suite_run_id: str) -> ScoreSums:
    """A suite run's scores summed per eval and assertion, as the driver returns them (the sum of a float column is
    a float on SQLite and PostgreSQL, a count an int): its kept rows once closed, else summed from its assertions.
    Read by the driver's cursor: 200,000 rows without a result object each."""
    session = session_of(conn)
    query = _KEPT_SCORES if _kept(session, suite_run_id) else _SUMS
    sums: ScoreSums = session.execute(query, (suite_run_id,)).fetchall()
    return sums


def kept_counts(conn: Connection, suite_run_id: str) -> dict[str, CountRow] | None:
    """Each planned eval's counts and cluster as its closed suite run kept them; None when the suite run has none
    (still running, or a full store could not take them): then the caller folds its eval runs."""
    session = session_of(conn)
    if not _kept(session, suite_run_id):
        return None
    return {row[0]: row[1:] for row in session.execute(_KEPT_COUNTS, (suite_run_id,)).fetchall()}


def kept_usage(conn: Connection, suite_run_id: str, *, strict: bool) -> UsageRows | None:
    """Each eval's runs not skipped, passing runs by the rule and agent cost as its closed suite run kept them;
    None when it has none (the caller sums its eval runs)."""
    session = session_of(conn)
    if not _kept(session, suite_run_id):
        return None
    query = _KEPT_USAGE.format(scored="" if strict else " + scored")
    rows: UsageRows = session.execute(query, (suite_run_id,)).fetchall()
    return rows


def keep_sums(session: Session, suite_run_id: str) -> None:
    """Write (again) a closing suite run's per-eval sums and score sums, in the caller's transaction (the one
    keeping its tallies)."""
    session.execute("DELETE FROM eval_sums WHERE suite_run_id = ?", (suite_run_id,))
    session.hash_joins(True)  # the run's eval runs grouped and joined to its plan (`Dialect.hashed`)
    session.execute(_KEEP_EVALS, (suite_run_id, suite_run_id, suite_run_id))
    session.hash_joins(False)  # the scores' carried lookups are index lookups, slot by slot
    _keep_scores(session, suite_run_id)


def _keep_scores(session: Session, suite_run_id: str) -> None:
    session.execute("DELETE FROM eval_scores WHERE suite_run_id = ?", (suite_run_id,))
    if session.dialect.uncompiled is not None:  # the carried lookup is costed for every slot, and runs for few
        session.execute(session.dialect.uncompiled)
    session.execute(_KEEP_SCORES, (suite_run_id, suite_run_id))


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


def forget(session: Session, suite_run_ids: Sequence[str]) -> None:
    """Delete these suite runs' kept sums (`niceeval gc` deleting the runs: the tables have no foreign key to
    cascade along)."""
    for table in ("eval_sums", "eval_scores"):
        for suite_run_id in suite_run_ids:
            session.execute(f"DELETE FROM {table} WHERE suite_run_id = ?", (suite_run_id,))


def keep_again(session: Session, suite_run_ids: Sequence[str]) -> None:
    """Keep these suite runs' score sums again (`niceeval gc` deleted records they carried; their counts and cost
    are on their own rows)."""
    for suite_run_id in suite_run_ids:
        _keep_scores(session, suite_run_id)
