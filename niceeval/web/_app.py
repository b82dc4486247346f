"""The viewer's Starlette application: routes, the security guard, static files shipped in the package."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from niceeval.web._render import render
from niceeval.web._security import Access, Guard

STATIC_DIR = Path(__file__).resolve().parent / "static"


@dataclass(frozen=True, slots=True)
class ViewerSettings:
    """What one viewer process serves, and to whom.

    Args:
        store_url: The results store to read (a SQLAlchemy URL).
        access: The token and host rules (see `niceeval.web._security`).
    """

    store_url: str
    access: Access


def create_app(settings: ViewerSettings) -> Starlette:
    """The viewer as an ASGI app: pages over the results store, behind the security guard."""
    app = Starlette(
        routes=[
            Route("/", _runs, name="runs"),
            Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
        ],
        exception_handlers={HTTPException: _http_error},
    )
    app.state.settings = settings
    app.add_middleware(Guard, access=settings.access)
    return app


def _runs(request: Request) -> Response:
    settings: ViewerSettings = request.app.state.settings
    return render(request, "runs.html", store_url=settings.store_url)


def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return render(request, "error.html", status_code=exc.status_code, status=exc.status_code, detail=exc.detail)
