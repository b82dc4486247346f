"""Comparing two suite runs (changes by evidence, score deltas, new and gone evals), and one eval's two runs side
by side.

The changed evals and the score changes are sorted and paged on the server (`?page=&sort=`, as on the run page):
`diff` lists only what changed, and a page renders at most `CHANGES_PER_PAGE` of each, so a pair of 100,000-eval
runs with thousands of flips costs the page no more to draw than ten.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from niceeval._core.assertion import AssertionResult
from niceeval._core.errors import ConfigError
from niceeval._core.results import RunResult
from niceeval.render import rounds
from niceeval.store import DiffOptions, OutcomeChange, RunNotFound, ScoreChange, Store, SuiteRunInfo
from niceeval.web import _queries
from niceeval.web._lines import pair_page
from niceeval.web._pages import render
from niceeval.web._requests import diffs_of, page_number, required, store_of

PICKER_RUNS = 50
PAIRS_PER_PAGE = 200
CHANGES_PER_PAGE = 200
REFRESH_SECONDS = 2
"""How often the page of a diff being computed asks again (a meta refresh: no script)."""

_CHANGE_RANK = {"regression": 0, "improvement": 1, "noise": 2, "unchanged": 3}
CHANGE_SORTS: dict[str, Callable[[OutcomeChange], Any] | None] = {
    "evidence": None,  # diff's own order: smallest q-value, then the largest move
    "eval": lambda c: c.eval_id,
    "change": lambda c: (_CHANGE_RANK[c.change], not c.worse),
}
"""`?sort=` names for the changed evals and the order each gives (ties in evidence order; score changes follow by
eval id for `eval`, else by the largest move)."""
SORT_WORDS = {"evidence": "strongest evidence first", "eval": "by eval id", "change": "regressions first"}


@dataclass(frozen=True, slots=True)
class ChangePage:
    """One page of a comparison's changed evals and per-eval score changes."""

    flips: list[OutcomeChange]
    scores: list[ScoreChange]
    page: int
    """The page shown: the one asked for, or the last when it asked past the end."""
    pages: int
    sort: str

    @property
    def has_next(self) -> bool:
        return self.page < self.pages


def change_page(
    flips: Sequence[OutcomeChange], scores: Sequence[ScoreChange], sort: str, page: int, per_page: int
) -> ChangePage:
    """Page `page` (1-based; past the end: the last) of the changes sorted by `sort` (a key of `CHANGE_SORTS`)."""
    order = CHANGE_SORTS[sort]
    ordered = list(flips) if order is None else sorted(flips, key=order)
    by_score = sorted(scores, key=(lambda s: (s.eval_id, s.assertion)) if sort == "eval" else lambda s: -abs(s.delta))
    pages = max(1, -(-max(len(ordered), len(by_score)) // per_page))
    shown = min(page, pages)
    start = (shown - 1) * per_page
    return ChangePage(
        flips=ordered[start : start + per_page], scores=by_score[start : start + per_page], page=shown, pages=pages,
        sort=sort,
    )  # fmt: skip


def _sort(request: Request) -> str:
    """`?sort=` of the changes, or a 400 page naming the ones allowed."""
    sort = request.query_params.get("sort") or "evidence"
    if sort not in CHANGE_SORTS:
        raise HTTPException(400, f"unknown sort {sort!r}: use one of {', '.join(CHANGE_SORTS)}.")
    return sort


@dataclass(frozen=True, slots=True)
class AssertionPair:
    """One assertion name in the base run and the head run of an eval."""

    name: str
    base: AssertionResult | None
    head: AssertionResult | None

    @property
    def delta(self) -> float | None:
        if self.base is None or self.head is None or self.base.score is None or self.head.score is None:
            return None
        return self.head.score - self.base.score


def compare_page(request: Request) -> Response:
    """`/compare?base=A&head=B&show=changed|all`: head defaults to the latest run, base to the one before it."""
    store = store_of(request)
    recent = store.runs(limit=PICKER_RUNS)
    if len(recent) < 2:
        return render(request, "compare.html", ready=False, recent=recent)
    head, base = _queries.compared_runs(
        store, request.query_params.get("head") or recent[0].id, request.query_params.get("base"), recent[1].id
    )
    threshold = _threshold(request.query_params.get("threshold", "0.1"))
    sort = _sort(request)
    try:
        diff = diffs_of(request).diff(base, head, DiffOptions(threshold=threshold))
    except ConfigError as exc:  # the same run twice, or runs with no eval in common: pick others
        picked = "base" in request.query_params or "head" in request.query_params
        return render(
            request, "compare.html", ready=True, recent=recent, base=base, head=head, problem=str(exc),
            show_all=False, threshold=threshold, sort=sort, sorts=CHANGE_SORTS, status_code=400 if picked else 200,
        )  # fmt: skip
    if diff is None:  # being computed off the request: a page that says so and asks again
        return render(
            request, "compare.html", ready=True, recent=recent, base=base, head=head, problem=None, computing=True,
            refresh_seconds=REFRESH_SECONDS, show_all=False, threshold=threshold, sort=sort, sorts=CHANGE_SORTS,
        )  # fmt: skip
    show_all = request.query_params.get("show") == "all"
    pairs = pair_page(store, base, head, page_number(request), PAIRS_PER_PAGE) if show_all else None
    changes = change_page(diff.changed, diff.scores, sort, 1 if show_all else page_number(request), CHANGES_PER_PAGE)
    return render(
        request,
        "compare.html",
        ready=True,
        recent=recent,
        base=base,
        head=head,
        diff=diff,
        problem=None,
        flips=diff.changed,
        changes=changes,
        changed={c.eval_id for c in diff.changed} | {s.eval_id for s in diff.scores},
        pairs=pairs,
        show_all=show_all,
        threshold=threshold,
        sort=sort,
        sorts=CHANGE_SORTS,
        sort_words=SORT_WORDS,
    )


def compare_eval_page(request: Request) -> Response:
    """`/compare/eval?base=A&head=B&id=EVAL_ID`: the eval's run in each suite run, replies side by side."""
    store = store_of(request)
    base = _queries.run_info(store, required(request, "base"))
    head = _queries.run_info(store, required(request, "head"))
    eval_id = required(request, "id")
    before, after = _first_run(store, base, eval_id), _first_run(store, head, eval_id)
    if before is None and after is None:
        raise HTTPException(404, f"eval {eval_id!r} ran in neither suite run.")
    old, new = (before.assertions if before else []), (after.assertions if after else [])
    names = list(dict.fromkeys([a.name for a in old] + [a.name for a in new]))
    by_name = [AssertionPair(n, _named(old, n), _named(new, n)) for n in names]
    return render(
        request,
        "compare_eval.html",
        base=base,
        head=head,
        eval_id=eval_id,
        before=before,
        after=after,
        before_rounds=rounds(before) if before else [],
        after_rounds=rounds(after) if after else [],
        assertions=by_name,
    )


def _first_run(store: Store, run: SuiteRunInfo, eval_id: str) -> RunResult | None:
    runs = _queries.eval_runs_of(store, run.id, eval_id)
    if not runs:
        return None
    focus = next((i for i in runs if i.outcome == "failed"), runs[0])
    try:
        return store.eval_run(run.id, eval_id, focus.run_index)
    except RunNotFound:
        return None


def _named(found: list[AssertionResult], name: str) -> AssertionResult | None:
    return next((a for a in found if a.name == name), None)


def _threshold(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        return 0.1
    return value if 0.0 <= value <= 1.0 else 0.1
