"""What every page handler needs from a request: the store, a page number, a suite run or a 404."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request

from niceeval.store import RunNotFound, Store, SuiteRunDetail
from niceeval.web._diffs import DiffWorker


def store_of(request: Request) -> Store:
    """The results store this viewer reads."""
    store: Store = request.app.state.store
    return store


def diffs_of(request: Request) -> DiffWorker:
    """The worker that computes the compare page's diffs off the request."""
    diffs: DiffWorker = request.app.state.diffs
    return diffs


def page_number(request: Request) -> int:
    """`?page=N` (1-based); anything else is page 1."""
    text = request.query_params.get("page", "1")
    return int(text) if text.isdigit() and 0 < int(text) < 1_000_000 else 1


def suite_run(store: Store, ref: str) -> SuiteRunDetail:
    """The suite run `ref` names, or a 404 page saying so."""
    try:
        return store.run(ref)
    except RunNotFound as exc:
        raise HTTPException(404, str(exc)) from None


def required(request: Request, name: str) -> str:
    """A query parameter the page cannot do without, or a 400 page naming it."""
    value = request.query_params.get(name, "")
    if not value:
        raise HTTPException(400, f"this page needs ?{name}=...")
    return value
