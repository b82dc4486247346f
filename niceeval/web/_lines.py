"""The run page's eval lines: filtered, sorted and paginated in the store, one page of rows per request.

A closed suite run's evals are read from `eval_tallies` (kept when it closed) by SQL: the filters in the WHERE
clause, the order in ORDER BY, the page by LIMIT/OFFSET over the eval ids alone (then that page's rows read whole:
in the default order a deep page is skipped in the index `(suite_run_id, rank, position, eval_id)`, and a sort
orders ids, not whole rows), so a run of 100,000 evals costs one page of rows. A
suite run still `running` has no tallies yet: its evals are folded from its eval runs (`folded_tallies`) and filtered
and sorted by the same rules here. Each shown line's first miss and the run to open are looked up for that page's
evals alone.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, Text, cast, func, select
from starlette.exceptions import HTTPException
from starlette.requests import Request

from niceeval._core.outcome import OUTCOMES, Outcome
from niceeval._core.summary import EvalTally, PlannedEval
from niceeval._core.wording import miss_words
from niceeval.stats import Estimate
from niceeval.store import Store, SuiteRunInfo
from niceeval.store.tables import TallyRow, eval_runs, eval_tallies, folded_tallies, suite_tallies
from niceeval.web import _queries

SORTS: dict[str, str] = {
    "verdict": "rank",
    "eval": "eval_id",
    "position": "position",
    "duration": "duration_s",
    "cost": "cost",
    "pass_rate": "pass_rate",
}
"""`?sort=` names and the tally each orders by (ties in plan order; an unknown cost or rate last either way)."""
ORDERS = ("asc", "desc")


@dataclass(frozen=True, slots=True)
class LineQuery:
    """What the run page asked for: `?outcome=`, `?tag=`, `?q=` (eval id contains, any case), `?sort=`, `?order=`."""

    outcome: str = ""
    tag: str = ""
    text: str = ""
    sort: str = "verdict"
    order: str = "asc"

    @property
    def params(self) -> dict[str, str]:
        """The query's parameters that differ from the defaults (for the pager's and the sort links' URLs)."""
        given = {"outcome": self.outcome, "tag": self.tag, "q": self.text}
        if self.sort != "verdict" or self.order != "asc":
            given |= {"sort": self.sort, "order": self.order}
        return {name: value for name, value in given.items() if value}


@dataclass(frozen=True, slots=True)
class EvalLine:
    """One eval of a suite run, as its row in the run page."""

    eval_id: str
    location: str
    tags: list[str]
    verdict: Outcome
    counts: dict[Outcome, int]
    planned: int
    passing: int
    """Runs that count as passes (`scored` too, unless the suite ran `--strict`)."""
    counted: int
    """Runs that were not skipped."""
    pass_rate: float | None
    mean_duration_s: float
    cost: float | None
    error: str | None
    """The first miss, as the HTML report's index says it: the error that ended the lowest missing run, else
    that run's first failed assertion (`name: shortfall`)."""
    focus_run: int
    """The run index to open: the first failed run, else the first scored, else run 0."""
    points: str = ""
    """A score eval's points (`2/3 points`, or their mean over the runs with its interval); "" otherwise."""

    @property
    def done(self) -> int:
        return sum(self.counts.values())

    @property
    def interval(self) -> str:
        """`95% CI 49%-94%`: the Wilson interval of the pass rate over the runs (empty without runs)."""
        from niceeval.render import interval_text, runs_rate

        return interval_text(runs_rate(self.passing, self.counted))


@dataclass(frozen=True, slots=True)
class LinePage:
    """One page of a suite run's eval lines."""

    lines: list[EvalLine]
    matched: int
    """Evals the filters keep."""
    total: int
    """Evals with a stored run."""
    page: int
    """The page shown: the one asked for, or the last when it asked past the end."""
    pages: int
    tags: list[str]
    """Every tag of the run's evals, for the filter."""
    varied: list[str]
    """The evals that ran with variants, in plan order."""
    pass_rate: Estimate
    """The suite's pass rate with its interval (`render.suite_rate`)."""

    @property
    def has_next(self) -> bool:
        return self.page < self.pages


def line_query(request: Request) -> LineQuery:
    """The run page's filters and order from its URL, or a 400 page naming what is wrong and what is allowed."""
    params = request.query_params
    outcome = params.get("outcome", "")
    if outcome and outcome not in OUTCOMES:
        raise HTTPException(400, f"unknown outcome {outcome!r}: use one of {', '.join(OUTCOMES)}.")
    sort = params.get("sort", "") or "verdict"
    if sort not in SORTS:
        raise HTTPException(400, f"unknown sort {sort!r}: sort by one of {', '.join(SORTS)}.")
    order = params.get("order", "") or "asc"
    if order not in ORDERS:
        raise HTTPException(400, f"unknown order {order!r}: use asc or desc.")
    return LineQuery(outcome=outcome, tag=params.get("tag", ""), text=params.get("q", "").strip(), sort=sort,
                     order=order)  # fmt: skip


def line_page(store: Store, run: SuiteRunInfo, query: LineQuery, page: int, per_page: int) -> LinePage:
    """Page `page` (1-based; past the end: the last) of the run's eval lines that `query` keeps, in its order."""
    with store.engine.connect() as conn:
        kept = _kept(conn, run.id) if run.status != "running" else None
        found = (
            _from_kept(conn, run.id, query, page, per_page, kept)
            if kept
            else _folded(conn, run.id, query, page, per_page)
        )
        runs = _page_runs(conn, run.id, [row.eval_id for row in found.rows])
    misses = _queries.first_misses(store, run.id, [row.eval_id for row in found.rows]) if found.rows else {}
    return LinePage(
        lines=[_line(row, runs.get(row.eval_id, []), misses) for row in found.rows], matched=found.matched,
        total=found.total, page=found.page, pages=found.pages, tags=found.tags, varied=found.varied,
        pass_rate=found.pass_rate,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Found:
    rows: list[TallyRow]
    matched: int
    total: int
    tags: list[str]
    page: int
    pages: int
    varied: list[str]
    pass_rate: Estimate


@dataclass(frozen=True, slots=True)
class _Kept:
    """A closed suite run's own tally (`suite_tallies`)."""

    pass_rate: Estimate
    tags: list[str]
    varied: list[str]


def _kept(conn: Connection, suite_run_id: str) -> _Kept | None:
    """The tally kept for a closed suite run (None: none was kept, so its evals' are not either)."""
    row = conn.execute(
        select(suite_tallies.c.pass_rate, suite_tallies.c.low, suite_tallies.c.high, suite_tallies.c.tags,
               suite_tallies.c.varied).where(suite_tallies.c.suite_run_id == suite_run_id)
    ).first()  # fmt: skip
    if row is None:
        return None
    rate = Estimate(value=row.pass_rate, low=row.low, high=row.high)
    return _Kept(pass_rate=rate, tags=list(row.tags), varied=list(row.varied))


def _from_kept(conn: Connection, suite_run_id: str, query: LineQuery, page: int, per_page: int, kept: _Kept) -> _Found:
    in_run = eval_tallies.c.suite_run_id == suite_run_id
    wanted: list[ColumnElement[bool]] = [in_run]
    if query.outcome:
        wanted.append(eval_tallies.c.verdict == query.outcome)
    if query.tag:  # the run's few distinct tag lists that hold the tag, matched as the stored JSON text
        tags_text = cast(eval_tallies.c.tags, Text)
        lists = [str(text) for text in conn.execute(select(tags_text).where(in_run).distinct()).scalars()]
        wanted.append(tags_text.in_([text for text in lists if query.tag in _tags(text)]))
    if query.text:
        wanted.append(func.lower(eval_tallies.c.eval_id).contains(query.text.lower(), autoescape=True))
    total = int(conn.execute(select(func.count()).where(in_run)).scalar_one())
    matched = total if len(wanted) == 1 else int(conn.execute(select(func.count()).where(*wanted)).scalar_one())
    page, pages = _clamp(page, matched, per_page)
    column = eval_tallies.c[SORTS[query.sort]]
    ordered = column.desc() if query.order == "desc" else column.asc()
    if column.nullable:
        ordered = ordered.nulls_last()
    shown = (
        select(eval_tallies.c.eval_id)
        .where(*wanted)
        .order_by(ordered, eval_tallies.c.position)
        .limit(per_page)
        .offset((page - 1) * per_page)
        .subquery()
    )
    rows: Select[Any] = (
        select(*(eval_tallies.c[field.name] for field in fields(TallyRow)))
        .join(shown, eval_tallies.c.eval_id == shown.c.eval_id)
        .where(in_run)
        .order_by(ordered, eval_tallies.c.position)
    )
    return _Found(
        rows=[TallyRow(**row) for row in conn.execute(rows).mappings()], matched=matched, total=total,
        tags=kept.tags, page=page, pages=pages, varied=kept.varied, pass_rate=kept.pass_rate,
    )  # fmt: skip


def _folded(conn: Connection, suite_run_id: str, query: LineQuery, page: int, per_page: int) -> _Found:
    rows, pass_rate = folded_tallies(conn, suite_run_id)
    text = query.text.lower()
    kept = [
        row
        for row in rows
        if (not query.outcome or row.verdict == query.outcome)
        and (not query.tag or query.tag in row.tags)
        and (not text or text in row.eval_id.lower())
    ]
    name = SORTS[query.sort]
    known = [row for row in kept if getattr(row, name) is not None]
    known.sort(key=lambda row: getattr(row, name), reverse=query.order == "desc")  # stable: ties in plan order
    ordered = known + [row for row in kept if getattr(row, name) is None]
    page, pages = _clamp(page, len(kept), per_page)
    start = (page - 1) * per_page
    return _Found(
        rows=ordered[start : start + per_page], matched=len(kept), total=len(rows),
        tags=sorted({t for row in rows for t in row.tags}), page=page, pages=pages,
        varied=[row.eval_id for row in rows if row.varied], pass_rate=pass_rate,
    )  # fmt: skip


def _clamp(page: int, matched: int, per_page: int) -> tuple[int, int]:
    pages = max(1, -(-matched // per_page))
    return min(page, pages), pages


def _tags(text: str) -> list[str]:
    found = json.loads(text)
    return [str(t) for t in found] if isinstance(found, list) else []


def _page_runs(conn: Connection, suite_run_id: str, eval_ids: Sequence[str]) -> dict[str, list[tuple[Any, ...]]]:
    """`(run_index, outcome, error, points, points_possible)` of each run of these evals, in run order."""
    if not eval_ids:
        return {}
    query = (
        select(
            eval_runs.c.eval_id,
            eval_runs.c.run_index,
            eval_runs.c.outcome,
            eval_runs.c.error,
            eval_runs.c.points,
            eval_runs.c.points_possible,
        )
        .where(eval_runs.c.suite_run_id == suite_run_id, eval_runs.c.eval_id.in_(list(eval_ids)))
        .order_by(eval_runs.c.eval_id, eval_runs.c.run_index)
    )
    found: dict[str, list[tuple[Any, ...]]] = {}
    for eval_id, *run in conn.execute(query):
        found.setdefault(eval_id, []).append(tuple(run))
    return found


def _line(row: TallyRow, runs: list[tuple[Any, ...]], misses: dict[tuple[str, int], Any]) -> EvalLine:
    counts: dict[Outcome, int] = {"passed": row.passed, "scored": row.scored, "failed": row.failed,
                                  "skipped": row.skipped}  # fmt: skip
    return EvalLine(
        eval_id=row.eval_id, location=f"{row.file}:{row.line}", tags=row.tags, verdict=row.verdict, counts=counts,
        planned=row.runs, passing=row.passing, counted=row.counted, pass_rate=row.pass_rate,
        mean_duration_s=row.duration_s, cost=row.cost, error=_first_miss(row.eval_id, runs, misses),
        focus_run=_focus(runs), points=_points(row, runs),
    )  # fmt: skip


def _points(row: TallyRow, runs: list[tuple[Any, ...]]) -> str:
    """A score eval's points over the page's runs of it, as the HTML report says them ("" for a pass/fail eval)."""
    from niceeval.render import eval_points_text

    tally = EvalTally(eval=PlannedEval(id=row.eval_id, file=row.file, line=row.line))
    for _, outcome, _, points, possible in runs:
        if outcome != "skipped":
            tally.add_points(points, possible)
    return eval_points_text(tally)


def _first_miss(eval_id: str, runs: list[tuple[Any, ...]], misses: dict[tuple[str, int], Any]) -> str | None:
    missed = [(run[0], run[2]) for run in runs if run[1] in ("failed", "scored")]
    if not missed:
        return None
    run_index, error = min(missed, key=lambda found: found[0])
    words = f"{error['type']}: {error['message']}" if error else None
    return miss_words(words, misses.get((eval_id, run_index)))


def _focus(runs: list[tuple[Any, ...]]) -> int:
    for wanted in ("failed", "scored"):
        for run in runs:
            if run[1] == wanted:
                return int(run[0])
    return int(runs[0][0]) if runs else 0


@dataclass(frozen=True, slots=True)
class Pair:
    """One eval in both suite runs (either side may be missing: a new or gone eval)."""

    eval_id: str
    base: TallyRow | None
    head: TallyRow | None


@dataclass(frozen=True, slots=True)
class PairPage:
    """One page of the evals of two suite runs: the compared run's in plan order, then those only the baseline had."""

    pairs: list[Pair]
    total: int
    page: int
    pages: int

    @property
    def has_next(self) -> bool:
        return self.page < self.pages


def pair_page(store: Store, base: SuiteRunInfo, head: SuiteRunInfo, page: int, per_page: int) -> PairPage:
    """Page `page` (past the end: the last) of the two runs' evals side by side, read a page of tallies a side."""
    with store.engine.connect() as conn:
        if all(run.status != "running" and _kept(conn, run.id) is not None for run in (base, head)):
            shown, total, page, pages = _kept_pair_ids(conn, base.id, head.id, page, per_page)
        else:
            before, after = _plan_order(conn, base), _plan_order(conn, head)
            known = set(after)
            order = after + [eval_id for eval_id in before if eval_id not in known]
            total, (page, pages) = len(order), _clamp(page, len(order), per_page)
            shown = order[(page - 1) * per_page : page * per_page]
        old, new = _rows_of(conn, base, shown), _rows_of(conn, head, shown)
    pairs = [Pair(eval_id, old.get(eval_id), new.get(eval_id)) for eval_id in shown]
    return PairPage(pairs=pairs, total=total, page=page, pages=pages)


def _kept_pair_ids(conn: Connection, base: str, head: str, page: int, per_page: int) -> tuple[list[str], int, int, int]:
    """`pair_page`'s ids of two closed runs from their kept tallies, a page at a time in SQL (not every id of two
    100,000-eval runs): the ids, how many there are in all, the page shown and the number of pages."""
    theirs = eval_tallies.alias("theirs")
    in_head = select(eval_tallies.c.eval_id).where(eval_tallies.c.suite_run_id == head)
    only_base = select(eval_tallies.c.eval_id).where(
        eval_tallies.c.suite_run_id == base,
        ~select(theirs.c.eval_id)
        .where(theirs.c.suite_run_id == head, theirs.c.eval_id == eval_tallies.c.eval_id)
        .exists(),
    )
    counted = [conn.execute(select(func.count()).select_from(q.subquery())).scalar_one() for q in (in_head, only_base)]
    page, pages = _clamp(page, sum(counted), per_page)
    start = (page - 1) * per_page
    shown: list[str] = []
    if start < counted[0]:
        ordered = in_head.order_by(eval_tallies.c.position).limit(per_page).offset(start)
        shown = list(conn.execute(ordered).scalars())
    if len(shown) < per_page:
        rest = only_base.order_by(eval_tallies.c.position).limit(per_page - len(shown))
        shown += conn.execute(rest.offset(max(0, start - counted[0]))).scalars()
    return shown, sum(counted), page, pages


def _plan_order(conn: Connection, run: SuiteRunInfo) -> list[str]:
    """The ids of the run's evals with a stored run, in plan order."""
    if run.status != "running" and _kept(conn, run.id) is not None:
        query = select(eval_tallies.c.eval_id).where(eval_tallies.c.suite_run_id == run.id)
        return list(conn.execute(query.order_by(eval_tallies.c.position)).scalars())
    return [row.eval_id for row in folded_tallies(conn, run.id)[0]]


def _rows_of(conn: Connection, run: SuiteRunInfo, eval_ids: list[str]) -> dict[str, TallyRow]:
    if run.status != "running" and _kept(conn, run.id) is not None:
        query = select(*(eval_tallies.c[field.name] for field in fields(TallyRow))).where(
            eval_tallies.c.suite_run_id == run.id, eval_tallies.c.eval_id.in_(eval_ids)
        )
        return {row.eval_id: row for row in (TallyRow(**found) for found in conn.execute(query).mappings())}
    wanted = set(eval_ids)
    return {row.eval_id: row for row in folded_tallies(conn, run.id)[0] if row.eval_id in wanted}
