"""Comparing setups (experiments, or suite runs): a column per setup with every measure's interval, each pair on its
shared cases, the Pareto front, and pass rate against cost drawn with both intervals."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response

from niceeval._core.errors import ConfigError
from niceeval.store import RunNotFound, SetupComparison, SuiteRunInfo
from niceeval.web._front_chart import FrontPoint, front_chart
from niceeval.web._pages import render
from niceeval.web._requests import store_of

PICKER_RUNS = 50
MOST_SETUPS = 8
"""Setups one page compares: every pair is a paired comparison of its own."""


def setups_page(request: Request) -> Response:
    """`/setups?setup=A&setup=B...`: by default each experiment among the recent runs (its latest finished run),
    else the two latest finished suite runs."""
    store = store_of(request)
    recent = store.runs(limit=PICKER_RUNS)
    experiments = list(dict.fromkeys(r.experiment for r in recent if r.experiment is not None))
    picked = request.query_params.getlist("setup")
    chosen = picked or _default(recent, experiments)
    context: dict[str, Any] = {"recent": recent, "experiments": experiments, "chosen": chosen, "most": MOST_SETUPS}
    if len(chosen) < 2:
        return render(request, "setups.html", ready=False, **context)
    if len(chosen) > MOST_SETUPS:
        problem = f"{len(chosen)} setups picked; compare at most {MOST_SETUPS} at once."
        return render(request, "setups.html", ready=True, problem=problem, status_code=400, **context)
    try:
        comparison = store.compare(chosen)
    except (ConfigError, RunNotFound) as exc:
        return render(request, "setups.html", ready=True, problem=str(exc), status_code=400 if picked else 200,
                      **context)  # fmt: skip
    return render(
        request, "setups.html", ready=True, problem=None, comparison=comparison, chart=_chart(comparison),
        measures=_MEASURES, **context,
    )  # fmt: skip


_MEASURES = (
    ("pass rate", "pass_rate"),
    ("cost per eval run", "cost_per_run"),
    ("cost per passed run", "cost_per_pass"),
    ("p50 latency", "latency_p50"),
    ("p95 latency", "latency_p95"),
)
"""The measures of a setup's column, in order: (label, `SetupSummary` field)."""


def _default(recent: list[SuiteRunInfo], experiments: list[str]) -> list[str]:
    if len(experiments) >= 2:
        return experiments[:MOST_SETUPS]
    return [r.id for r in recent if r.status == "finished"][:2]


def _chart(comparison: SetupComparison) -> Markup:
    """Pass rate against cost of the setups whose cost is known."""
    return front_chart([
        FrontPoint(name=s.name, pass_rate=s.pass_rate, cost=s.cost_per_run, on_front=s.on_front)
        for s in comparison.setups
        if s.cost_per_run is not None
    ])  # fmt: skip
