"""The viewer's pages: its templates (`web/templates`, over `niceeval.render`'s shared parts) rendered with the
request into a response."""

from __future__ import annotations

import functools
from typing import Any

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse

from niceeval.render import environment
from niceeval.web._charts import outcome_bar


@functools.cache
def pages() -> jinja2.Environment:
    """The viewer's template environment, built once: the shared filters, and the outcome bar of its lists."""
    return environment("niceeval.web", {"outcome_bar": outcome_bar})


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """Render `template` with `context`, the request, the form's CSRF token and the viewer's page token."""
    page = pages().get_template(template)
    csrf = request.scope.get("state", {}).get("csrf", "")
    page_token: str = request.app.state.page_token
    html = page.render(request=request, csrf_token=csrf, page_token=page_token, **context)
    return HTMLResponse(html, status_code=status_code)
