"""One eval run in full: the conversation round by round, every assertion, judge prompts, commands, errors."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from niceeval.render import commands, rounds
from niceeval.store import RunNotFound
from niceeval.web import _queries
from niceeval.web._pages import render
from niceeval.web._requests import required, store_of
from niceeval.web._waterfall import waterfall


def eval_run_page(request: Request) -> Response:
    """`/runs/{run_id}/eval?id=EVAL_ID&run=N`: one eval run in full."""
    store = store_of(request)
    run = _queries.run_info(store, request.path_params["run_id"])
    eval_id = required(request, "id")
    text = request.query_params.get("run", "0")
    run_index = int(text) if text.isdigit() else 0
    try:
        result = store.eval_run(run.id, eval_id, run_index)
    except RunNotFound as exc:
        raise HTTPException(404, str(exc)) from None
    siblings = _queries.eval_runs_of(store, run.id, eval_id)
    return render(
        request,
        "eval_run.html",
        run=run,
        result=result,
        siblings=siblings,
        rounds=rounds(result),
        commands=commands(result),
        trace=waterfall(result.spans),
    )
