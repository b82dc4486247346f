"""Each eval's tally in a closed suite run (`eval_tallies`) and the suite run's own (`suite_tallies`: its pass rate
with its interval, its evals' tags, the evals that ran with variants, its judge calls by model and its inconclusive
and most missed assertions).

Kept when a suite run closes (right after `finish_suite` commits, in a transaction of its own; the last shard's
`finish_shard`; migration 0016 for the runs stored before it), from the same rows and by the same rule as the suite
run's totals (`EvalTally.status`), so a page of a 100,000-eval run reads 200 rows of one table by an index, and the
runs list reads one pass rate per suite run, instead of folding every eval run at each request. A suite run still
`running` has none (a resume's reopening drops it), nor has a closed one whose tally a full store could not take:
their readers fold the eval runs (`tally_rows`) as they are.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

import pydantic_core

from niceeval._core.outcome import Outcome
from niceeval._core.summary import EvalTally, PlannedEval
from niceeval.stats import Estimate, RateSums, clustered_rate, clustered_rate_of_sums
from niceeval.store._driver import Session, session_of
from niceeval.store._verdicts import OUTCOME_SUMS, judged_counts

if TYPE_CHECKING:
    from sqlalchemy import Connection

VERDICT_RANK: dict[str, int] = {"failed": 0, "scored": 1, "passed": 2, "skipped": 3}
"""The run page's default order: failures first, then soft misses, passes, skips (then plan order)."""

TALLY_COLUMNS = (
    "suite_run_id", "eval_id", "position", "file", "line", "tags", "runs", "passed", "scored", "failed", "skipped",
    "passing", "counted", "pass_rate", "duration_s", "cost", "verdict", "rank", "varied",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class TallyRow:
    """One eval of a suite run, folded over its stored runs: what its line on the run page shows and sorts by."""

    eval_id: str
    position: int
    file: str
    line: int
    tags: list[str]
    runs: int
    """Runs planned."""
    passed: int
    scored: int
    failed: int
    skipped: int
    passing: int
    """Runs that count as passes (`scored` too, unless the suite ran `--strict`)."""
    counted: int
    """Runs that were not skipped."""
    pass_rate: float | None
    duration_s: float
    """Mean over the eval's finished runs."""
    cost: float | None
    """Agent and judge cost over its runs; None when one of them had no price."""
    verdict: Outcome
    rank: int
    varied: bool
    """Some run of it had a variant (the run page's per-variant table reads those evals' runs)."""


def tally_rows(session: Session, suite_run_id: str) -> tuple[list[TallyRow], Estimate]:
    """Every eval with a stored run in plan order, folded by the suite run's rule; and the suite run's pass rate
    with its interval (`render.suite_rate`: the mean of the evals' rates, clustered by case or `cluster=`)."""
    rule = session.execute("SELECT strict, min_pass_rate FROM suite_runs WHERE id = ?", (suite_run_id,)).fetchone()
    if rule is None:
        return [], clustered_rate([])
    strict, min_pass_rate = bool(rule[0]), float(rule[1])
    plan = session.execute(
        "SELECT eval_id, position, file, line, tags, runs, cluster FROM suite_evals WHERE suite_run_id = ? "
        "ORDER BY position",
        (suite_run_id,),
    ).fetchall()
    folded: dict[str, tuple[EvalTally, list[float | None]]] = {}
    varied: set[str] = set()
    for eval_id, outcome, duration_s, agent_cost, judge_cost, variant, failure in session.execute(
        "SELECT eval_id, outcome, duration_s, agent_cost, judge_cost, variant, failure_class FROM eval_runs "
        "WHERE suite_run_id = ?",
        (suite_run_id,),
    ):
        found = folded.get(eval_id)
        if found is None:
            found = folded[eval_id] = (EvalTally(eval=PlannedEval(id=eval_id, file="", line=0)), [0.0])
        if variant is not None and variant != "null":  # SQLite hands JSON back as its text
            varied.add(eval_id)
        tally, cost = found
        tally.count_run(outcome, failure)  # an `infra` failure is not counted in the pass rate
        tally.total_duration_s += duration_s
        if agent_cost is None or judge_cost is None or cost[0] is None:
            cost[0] = None
        else:
            cost[0] += agent_cost + judge_cost
    rows, clusters = [], []
    for eval_id, position, file, line, tags, runs, cluster in plan:
        if eval_id not in folded:
            continue
        tally, cost = folded[eval_id]
        verdict = tally.status(strict=strict, min_pass_rate=min_pass_rate)
        rows.append(
            TallyRow(
                eval_id=eval_id, position=position, file=file, line=line,
                tags=pydantic_core.from_json(tags) if isinstance(tags, str) else list(tags), runs=runs,
                passed=tally.counts["passed"], scored=tally.counts["scored"], failed=tally.counts["failed"],
                skipped=tally.counts["skipped"], passing=tally.passing(strict=strict), counted=tally.counted,
                pass_rate=tally.pass_rate(strict=strict), duration_s=tally.mean_duration_s, cost=cost[0],
                verdict=verdict, rank=VERDICT_RANK[verdict], varied=eval_id in varied,
            )
        )  # fmt: skip
        clusters.append(cluster or eval_id)
    counted = [(row, key) for row, key in zip(rows, clusters, strict=True) if row.counted]
    return rows, clustered_rate([(row.passing, row.counted) for row, _ in counted], [key for _, key in counted])


class Counts(NamedTuple):
    """One eval's runs by outcome in a suite run, and its cluster: what `diff` and `exp compare` weigh."""

    passed: int
    scored: int
    failed: int
    skipped: int
    counted: int
    """Runs that were neither skipped nor failed for `infra`."""
    cluster: str | None

    def passing(self, *, strict: bool) -> int:
        """Runs that count as passes: `passed`, and `scored` unless strict (`EvalTally.passing`)."""
        return self.passed + (0 if strict else self.scored)

    def tally(self, eval_id: str) -> EvalTally:
        """The eval's `EvalTally` (for its verdict by a rule: `EvalTally.status`)."""
        done = self.passed + self.scored + self.failed + self.skipped
        tally = EvalTally(
            eval=PlannedEval(id=eval_id, file="", line=0, cluster=self.cluster),
            passed=self.passed,
            scored=self.scored,
            failed=self.failed,
            skipped=self.skipped,
        )
        tally.infra = done - self.skipped - self.counted
        return tally


_SENT = "(jc.asked AND NOT jc.cached)"  # `JudgeCall.sent`: older stores kept `asked` true on cached verdicts
_SPENT = "(jc.input_tokens + jc.output_tokens + jc.cache_read_tokens)"
_IN_RUN = "FROM {table} JOIN eval_runs e ON e.id = a.eval_run_id WHERE e.suite_run_id = ?"
_BY_MODEL = (
    f"SELECT jc.model, sum(CASE WHEN {_SENT} THEN 1 ELSE 0 END), sum(CASE WHEN jc.cached THEN 1 ELSE 0 END), "
    f"sum(CASE WHEN {_SENT} OR jc.cached THEN 0 ELSE 1 END), sum(CASE WHEN jc.fallback THEN 1 ELSE 0 END), "
    f"sum(CASE WHEN {_SENT} AND jc.cause IS NOT NULL THEN 1 ELSE 0 END), sum(CASE WHEN {_SENT} THEN {_SPENT} ELSE 0 "
    f"END), sum(CASE WHEN {_SENT} THEN jc.cost ELSE 0.0 END), sum(CASE WHEN {_SENT} AND jc.cost IS NULL AND {_SPENT} "
    f"> 0 THEN 1 ELSE 0 END) {_IN_RUN.format(table='judge_calls jc JOIN assertions a ON a.id = jc.assertion_id')} "
    "GROUP BY jc.model ORDER BY count(*) DESC, jc.model"
)
_CAUSES = (
    f"SELECT a.cause, count(*) {_IN_RUN.format(table='assertions a')} AND a.state = 'inconclusive' "
    "GROUP BY a.cause ORDER BY count(*) DESC"
)
_MISSED = (
    f"SELECT a.name, count(*) {_IN_RUN.format(table='assertions a')} AND a.state = 'failed' "
    "GROUP BY a.name ORDER BY count(*) DESC, a.name LIMIT 10"
)


def judging(session: Session, suite_run_id: str) -> dict[str, list[list[Any]]]:
    """A suite run's judge calls by model (`[model, calls, cached, unsent, fallback, failed, tokens, cost]`, cost
    None when a sent call had tokens but no price), inconclusive assertions by cause (`[cause, count]`) and its ten
    most failed assertion names (`[name, count]`), as JSON-ready lists."""
    models = []
    for model, calls, cached, unsent, fallback, failed, tokens, cost, unpriced in session.execute(
        _BY_MODEL, (suite_run_id,)
    ):
        models.append([model, int(calls or 0), int(cached or 0), int(unsent or 0), int(fallback or 0),
                       int(failed or 0), int(tokens or 0), None if unpriced else float(cost or 0.0)])  # fmt: skip
    causes = [[cause, int(count)] for cause, count in session.execute(_CAUSES, (suite_run_id,))]
    missed = [[str(name), int(count)] for name, count in session.execute(_MISSED, (suite_run_id,))]
    return {"models": models, "inconclusive": causes, "missed": missed}


def folded_judging(conn: Connection, suite_run_id: str) -> dict[str, list[list[Any]]]:
    """`judging` over a SQLAlchemy connection (a running suite run's, for the viewer)."""
    return judging(session_of(conn), suite_run_id)


def run_judging(conn: Connection, suite_run_id: str, *, running: bool) -> dict[str, list[list[Any]]]:
    """`judging` as the viewer's run page and a stored run's HTML report read it: kept when the suite run closed
    (one row), counted from its rows while it runs (or when a full store could not keep it)."""
    session = session_of(conn)
    if not running:
        column = "judging::text" if session.dialect.kind == "postgresql" else "judging"
        kept = session.execute(f"SELECT {column} FROM suite_tallies WHERE suite_run_id = ?", (suite_run_id,)).fetchone()
        if kept is not None:
            found: dict[str, list[list[Any]]] = pydantic_core.from_json(kept[0])
            return found
    return judging(session, suite_run_id)


def folded_tallies(conn: Connection, suite_run_id: str) -> tuple[list[TallyRow], Estimate]:
    """`tally_rows` over a SQLAlchemy connection (a running suite run's, for the viewer)."""
    return tally_rows(session_of(conn), suite_run_id)


_FOLD = (
    "INSERT INTO eval_tallies ({columns}) SELECT p.suite_run_id, p.eval_id, p.position, p.file, p.line, p.tags, "
    "p.runs, g.passed, g.scored, g.failed, g.skipped, g.passing, g.counted, CASE WHEN g.counted > 0 THEN "
    "CAST(g.passing AS DOUBLE PRECISION) / g.counted END, g.duration_s, g.cost, j.column6, j.column7, g.varied = 1 "
    f"FROM suite_evals p JOIN (SELECT e.eval_id, {OUTCOME_SUMS}, "
    "sum(CASE WHEN e.outcome = 'passed' OR (e.outcome = 'scored' AND NOT ?) THEN 1 ELSE 0 END) AS passing, "
    "avg(e.duration_s) AS duration_s, "
    "CASE WHEN count(e.agent_cost) = count(*) AND count(e.judge_cost) = count(*) THEN "
    "sum(e.agent_cost + e.judge_cost) END AS cost, "
    "max(CASE WHEN e.variant IS NULL OR CAST(e.variant AS TEXT) = 'null' THEN 0 ELSE 1 END) AS varied "
    "FROM eval_runs e WHERE e.suite_run_id = ? GROUP BY e.eval_id"
    ") g ON g.eval_id = p.eval_id LEFT JOIN (VALUES {judged}) AS j ON j.column1 = g.passed AND j.column2 = g.scored "
    "AND j.column3 = g.failed AND j.column4 = g.skipped AND j.column5 = g.counted WHERE p.suite_run_id = ?"
)
"""Each eval's tally, its verdict and rank joined from its judged set of counts (a `VALUES` list of them, written
in the statement: numbers, and verdicts from `VERDICT_RANK`). Every eval has its set; the join is a `LEFT JOIN`
so that SQLite keeps the evals as the outer loop (an inner join put the few sets outside and read the plan once
per set: 3.4x the fold's time at 35 sets)."""
_CLUSTER = "CASE WHEN s.cluster IS NULL OR s.cluster = '' THEN t.eval_id ELSE s.cluster END"
"""An eval's cluster in its suite's pass rate: its `cluster=`, or the eval alone (`tally_rows`' key)."""
_RATED = (
    "FROM eval_tallies t JOIN suite_evals s ON s.suite_run_id = t.suite_run_id AND s.eval_id = t.eval_id "
    "WHERE t.suite_run_id = ? AND t.counted > 0"
)
_CLUSTERS = f"SELECT count(DISTINCT {_CLUSTER}) {_RATED}"
_RATES = f"SELECT t.passing, t.counted {_RATED} ORDER BY t.position"
_RATES_BY_CLUSTER = f"SELECT {_CLUSTER} AS cluster, t.passing, t.counted {_RATED} ORDER BY cluster"

_TAGS = "SELECT DISTINCT CAST(tags AS TEXT) FROM eval_tallies WHERE suite_run_id = ?"
_VARIED = "SELECT eval_id FROM eval_tallies WHERE suite_run_id = ? AND varied ORDER BY position"


def keep_tallies(session: Session, suite_run_id: str) -> None:
    """Write (again) a closing suite run's tallies and pass rate, in the caller's transaction: each distinct set of
    its evals' counts judged once by `EvalTally.status` (the rule `tally_rows` applies, in one place:
    `judged_counts`), then its eval runs folded per eval by one `INSERT ... SELECT ... GROUP BY` that joins each
    eval to its judged set; the suite's rate from the kept rows, read as a stream (`kept_rate`)."""
    session.hash_joins(True)  # every statement below reads all of the run's rows: the statistics may not know it
    rule = session.execute("SELECT strict, min_pass_rate FROM suite_runs WHERE id = ?", (suite_run_id,)).fetchone()
    session.execute("DELETE FROM eval_tallies WHERE suite_run_id = ?", (suite_run_id,))
    session.execute("DELETE FROM suite_tallies WHERE suite_run_id = ?", (suite_run_id,))
    strict, min_pass_rate = (bool(rule[0]), float(rule[1])) if rule is not None else (False, 1.0)
    judged = judged_counts(session, suite_run_id, strict=strict, min_pass_rate=min_pass_rate)
    if judged:
        rows = ", ".join(
            f"({', '.join(str(int(n)) for n in found.counts)}, '{found.verdict}', {VERDICT_RANK[found.verdict]})"
            for found in judged
        )
        fold = _FOLD.format(columns=", ".join(TALLY_COLUMNS), judged=rows)
        session.execute(fold, (strict, suite_run_id, suite_run_id))
    rate = kept_rate(session, suite_run_id)
    tags = sorted({tag for (found,) in session.execute(_TAGS, (suite_run_id,)).fetchall() for tag in _list(found)})
    varied = [eval_id for (eval_id,) in session.execute(_VARIED, (suite_run_id,)).fetchall()]
    json_mark = "?" + session.dialect.json_cast
    session.execute(
        "INSERT INTO suite_tallies (suite_run_id, pass_rate, low, high, tags, varied, judging) "
        f"VALUES (?, ?, ?, ?, {json_mark}, {json_mark}, {json_mark})",
        (suite_run_id, rate.value, rate.low, rate.high, _json(tags), _json(varied),
         _json(judging(session, suite_run_id))),
    )  # fmt: skip
    session.hash_joins(False)


def kept_rate(session: Session, suite_run_id: str) -> Estimate:
    """A suite run's pass rate from its kept tallies, as `tally_rows` gives it (`clustered_rate` of its evals'
    passing and counted runs by cluster), in two passes over them as the store reads them: the sums in plan order,
    then the spread cluster by cluster (`clustered_rate_of_sums`), so no row is held past its turn."""
    runs, inverse_runs, cases = 0, 0.0, 0

    def rates() -> Iterator[float]:
        nonlocal runs, inverse_runs, cases
        for passing, counted in session.stream(_RATES, (suite_run_id,)):
            runs += counted
            inverse_runs += 1 / counted
            cases += 1
            yield passing / counted

    rate_sum = math.fsum(rates())
    (clusters,) = session.execute(_CLUSTERS, (suite_run_id,)).fetchone()
    sums = RateSums(count=cases, rate_sum=rate_sum, runs=runs, inverse_runs=inverse_runs, clusters=int(clusters))

    def spread(shrunk: float) -> float:
        rows = session.stream(_RATES_BY_CLUSTER, (suite_run_id,))
        return math.fsum(
            math.fsum(passing / counted - shrunk for _, passing, counted in group) ** 2
            for _, group in itertools.groupby(rows, key=itemgetter(0))
        )

    return clustered_rate_of_sums(sums, spread)


def _list(text: str) -> list[str]:
    found: list[str] = pydantic_core.from_json(text)
    return found


def _json(value: object) -> str:
    return pydantic_core.to_json(value).decode()
