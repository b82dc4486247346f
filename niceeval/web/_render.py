"""Jinja2 rendering for the viewer: autoescaped templates shipped in the package, and the display filters."""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime
from typing import Any

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse

from niceeval.web import _charts


@functools.cache
def environment() -> jinja2.Environment:
    """The template environment: every `{{ }}` is HTML-escaped, an unknown name is an error, not a blank."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("niceeval.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        pct=pct, duration=duration, usd=usd, when=when, score=score, pretty=pretty, diff_class=diff_class
    )
    env.globals.update(outcome_bar=_charts.outcome_bar)
    return env


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """Render `template` with `context`, the request and the form's CSRF token."""
    page = environment().get_template(template)
    csrf = request.scope.get("state", {}).get("csrf", "")
    html = page.render(request=request, csrf_token=csrf, **context)
    return HTMLResponse(html, status_code=status_code)


def pct(value: float | None) -> str:
    """`0.833` -> `83%`; `None` -> an en dash."""
    return "\u2013" if value is None else f"{value * 100:.0f}%"


def score(value: float | None) -> str:
    """A score to two decimals; `None` (inconclusive) -> an en dash."""
    return "\u2013" if value is None else f"{value:.2f}"


def duration(seconds: float | None) -> str:
    """Seconds as people read them: `420 ms`, `3.2 s`, `4 m 05 s`, `1 h 02 m`."""
    if seconds is None:
        return "\u2013"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} m {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} m"


def usd(cost: float | None) -> str:
    """USD with precision that suits the amount; `None` (a model without a price) -> `unpriced`."""
    if cost is None:
        return "unpriced"
    if cost == 0:
        return "$0"
    if cost < 0.01:
        return f"${cost:.4f}"
    return f"${cost:.2f}"


def when(moment: datetime | None) -> str:
    """A timestamp in UTC, to the minute."""
    if moment is None:
        return "\u2013"
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M")


def pretty(value: Any) -> str:
    """A tool's input or output as readable text: strings as they are, anything else as indented JSON."""
    if value is None:
        return "\u2013"
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def diff_class(line: str) -> str:
    """The CSS class of one line of a unified diff: added, removed, a hunk header or a file header."""
    if line.startswith(("+++", "---", "diff --git", "rename ", "new file", "deleted file", "index ")):
        return "diff-file"
    if line.startswith("@@"):
        return "diff-hunk"
    if line.startswith("+"):
        return "diff-add"
    if line.startswith("-"):
        return "diff-del"
    return "diff-ctx"
