"""Rendering for the viewer: a template (see `_templates.py`) rendered with the request into a response."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse

from niceeval.web._templates import environment


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """Render `template` with `context`, the request and the form's CSRF token."""
    page = environment().get_template(template)
    csrf = request.scope.get("state", {}).get("csrf", "")
    html = page.render(request=request, csrf_token=csrf, **context)
    return HTMLResponse(html, status_code=status_code)
