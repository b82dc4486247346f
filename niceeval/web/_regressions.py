"""`POST /online/regressions`: the trace page's (and the online page's) button that writes a failing production
trace as a regression eval, as `niceeval cases from-trace` does.

The one viewer route that writes to the project, so it takes more than the CSRF cookie: the form must also carry
the page token, a secret made when the viewer starts and put only in its own pages, so no other page (nor a
script that has not read one of them) can make the request; a GET never writes. The regressions module is the
online suite run's project folder's `evals/regressions.py`, the trace's saved JSON beside it.
"""

from __future__ import annotations

import hmac
import re
import secrets
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qsl

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from niceeval._core.errors import ConfigError
from niceeval.online import RegressionRequest, WrittenRegression, write_regression
from niceeval.store import Store
from niceeval.web._pages import render
from niceeval.web._queries import run_info
from niceeval.web._requests import store_of
from niceeval.web._security import CSRF_COOKIE, form_is_genuine

PAGE_TOKEN_FIELD = "page_token"
_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
_MAX_FORM = 8_192


def new_page_token() -> str:
    """The secret a viewer process puts in its own pages' forms (made once per process)."""
    return secrets.token_urlsafe(24)


async def write_regression_case(request: Request) -> Response:
    """`POST /online/regressions`: write the trace's regression; a page naming the file and the eval written."""
    form = await _genuine(request)
    trace_id = form.get("trace", "").strip().lower()
    if not _TRACE_ID.match(trace_id):
        raise HTTPException(400, "the form names no trace: a trace id is 32 hex digits.")
    replay: Literal["live", "recorded"] = "recorded" if form.get("replay") == "recorded" else "live"
    store = store_of(request)
    root = await run_in_threadpool(_project_root, store, form.get("run", ""))
    wanted = RegressionRequest(trace_id=trace_id, root=root, eval_name=form.get("eval") or None, replay=replay)
    written: WrittenRegression | str = await run_in_threadpool(_write, store, wanted)
    if isinstance(written, str):
        status = 404 if written.startswith("no stored online result") else 409
        return render(request, "regression_written.html", status_code=status, error=written, trace_id=trace_id)
    return render(request, "regression_written.html", error=None, written=written, trace_id=trace_id, root=root)


def _write(store: Store, wanted: RegressionRequest) -> WrittenRegression | str:
    try:
        return write_regression(store, wanted)
    except ConfigError as exc:
        return str(exc)


def _project_root(store: Store, run: str) -> Path:
    """The project folder of the online suite run that scored the trace, which must be on this machine."""
    if not run:
        raise HTTPException(400, "the form names no online suite run, so the project folder is unknown.")
    info = run_info(store, run)
    root = Path(info.root)
    if not info.root or not root.is_dir():
        raise HTTPException(
            409,
            f"the project folder of suite run {info.id[:12]}, {info.root or '(none recorded)'}, is not on this "
            "machine: run `niceeval cases from-trace TRACE_ID` in the project instead.",
        )
    return root


async def _genuine(request: Request) -> dict[str, str]:
    """The form, once its CSRF field matched the browser's cookie and its page token this viewer's (else 403)."""
    body = await request.body()
    if len(body) > _MAX_FORM:
        raise HTTPException(413, "this form is too large.")
    form = dict(parse_qsl(body.decode("utf-8", errors="replace"), keep_blank_values=True))
    expected: str = request.app.state.page_token
    offered = form.get(PAGE_TOKEN_FIELD, "")
    genuine = form_is_genuine(form.get("csrf"), request.cookies.get(CSRF_COOKIE, ""))
    if not genuine or not hmac.compare_digest(offered.encode(), expected.encode()):
        raise HTTPException(
            403, "this form did not come from this viewer's own page (or the viewer restarted): reload the page."
        )
    return form
