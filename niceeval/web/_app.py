"""The viewer's Starlette application: routes, the security guard, static files shipped in the package."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from niceeval.store import Store
from niceeval.web._cases import (
    case_page,
    cases_page,
    delete_case,
    edit_case_form,
    new_case_form,
    save_edited_case,
    save_new_case,
)
from niceeval.web._compare import compare_eval_page, compare_page
from niceeval.web._diffs import INLINE_EVALS, DiffWorker
from niceeval.web._eval_run import eval_run_page
from niceeval.web._history import history_page
from niceeval.web._online import online_page
from niceeval.web._pages import render
from niceeval.web._regressions import new_page_token, write_regression_case
from niceeval.web._runs import run_page, runs_page
from niceeval.web._security import Access, Guard
from niceeval.web._setups import setups_page

STATIC = ("niceeval.web", "niceeval.render")
"""Packages whose `static/` folder the viewer serves under `/static`: its scripts, and the stylesheet and icon it
shares with the HTML report."""


@dataclass(frozen=True, slots=True)
class ViewerSettings:
    """What one viewer process serves, and to whom.

    Args:
        store: The results store to read (and to keep browser-authored cases in).
        access: The token and host rules (see `niceeval.web._security`).
        inline_diff_evals: The compare page diffs two runs of up to this many evals each in the request; a larger
            pair's diff is computed in the background while the page says so and refreshes itself
            (`niceeval.web._diffs`).
    """

    store: Store
    access: Access
    inline_diff_evals: int = INLINE_EVALS


def create_app(settings: ViewerSettings) -> Starlette:
    """The viewer as an ASGI app: pages over the results store, behind the security guard."""
    app = Starlette(
        routes=[
            Route("/", runs_page, name="runs"),
            Route("/runs/{run_id}", run_page, name="run"),
            Route("/runs/{run_id}/eval", eval_run_page, name="eval_run"),
            Route("/compare", compare_page, name="compare"),
            Route("/compare/eval", compare_eval_page, name="compare_eval"),
            Route("/setups", setups_page, name="setups"),
            Route("/evals/history", history_page, name="history"),
            Route("/online", online_page, name="online"),
            Route("/online/regressions", write_regression_case, methods=["POST"], name="write_regression"),
            Route("/cases", cases_page, name="cases"),
            Route("/cases/new", new_case_form, name="new_case"),
            Route("/cases/new", save_new_case, methods=["POST"]),
            Route("/cases/{name}", case_page, name="case"),
            Route("/cases/{name}/edit", edit_case_form, name="edit_case"),
            Route("/cases/{name}/edit", save_edited_case, methods=["POST"]),
            Route("/cases/{name}/delete", delete_case, methods=["POST"]),
            Mount("/static", StaticFiles(packages=[(package, "static") for package in STATIC]), name="static"),
        ],
        exception_handlers={HTTPException: _http_error},
    )
    app.state.store = settings.store
    app.state.diffs = DiffWorker(settings.store, inline_evals=settings.inline_diff_evals)
    app.state.page_token = new_page_token()
    app.add_middleware(Guard, access=settings.access)
    return app


def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return render(request, "error.html", status_code=exc.status_code, status=exc.status_code, detail=exc.detail)
