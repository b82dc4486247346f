"""What the HTML report and the viewer both render, below both: neither imports the other.

One run in full, judge counts, the variants table, every rate with its interval (`docs/statistics.md`), the
templates and filters, the stylesheet. Not a user's API:
`niceeval.report` and `niceeval.web` import these names, nothing else of the package.

`environment(room)` gives a room's pages (its own `templates/` folder) over the shared parts (this package's
`templates/`: `_macros.html`, `_run_detail.html`); `STATIC_DIR` holds the stylesheet and the icon both use.
Nothing here imports a web server. Names load on first use: the console and the JSON report collect the
variants table without Jinja2 or the rest.

Design: docs/design/rendering.md
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from niceeval._core.lazy import lazy_getattr

if TYPE_CHECKING:
    from niceeval.render._judging import JudgeModelUse
    from niceeval.render._points import (
        eval_points,
        eval_points_text,
        folded_points,
        folded_points_text,
        points_text,
        suite_points,
        suite_points_text,
    )
    from niceeval.render._rounds import Round, commands, rounds
    from niceeval.render._templates import STATIC_DIR, TEXT_LIMIT, environment, when
    from niceeval.render._uncertainty import (
        estimate_json,
        eval_rate,
        folded_case_rate,
        folded_power,
        folded_rate,
        interval_text,
        percent,
        power_text,
        rate_over_cases,
        runs_rate,
        suite_power,
        suite_rate,
        weighted_mean_over_cases,
    )
    from niceeval.render._variants import VariantRow, VariantTable

__all__ = [
    "STATIC_DIR",
    "TEXT_LIMIT",
    "JudgeModelUse",
    "Round",
    "VariantRow",
    "VariantTable",
    "commands",
    "environment",
    "estimate_json",
    "eval_points",
    "eval_points_text",
    "eval_rate",
    "folded_case_rate",
    "folded_points",
    "folded_points_text",
    "folded_power",
    "folded_rate",
    "interval_text",
    "percent",
    "points_text",
    "power_text",
    "rate_over_cases",
    "rounds",
    "runs_rate",
    "suite_points",
    "suite_points_text",
    "suite_power",
    "suite_rate",
    "weighted_mean_over_cases",
    "when",
]

__getattr__ = lazy_getattr(
    __name__,
    {
        "JudgeModelUse": "niceeval.render._judging",
        "eval_points": "niceeval.render._points",
        "eval_points_text": "niceeval.render._points",
        "points_text": "niceeval.render._points",
        "folded_points": "niceeval.render._points",
        "folded_points_text": "niceeval.render._points",
        "suite_points": "niceeval.render._points",
        "suite_points_text": "niceeval.render._points",
        "Round": "niceeval.render._rounds",
        "commands": "niceeval.render._rounds",
        "rounds": "niceeval.render._rounds",
        "STATIC_DIR": "niceeval.render._templates",
        "TEXT_LIMIT": "niceeval.render._templates",
        "environment": "niceeval.render._templates",
        "when": "niceeval.render._templates",
        "estimate_json": "niceeval.render._uncertainty",
        "eval_rate": "niceeval.render._uncertainty",
        "folded_case_rate": "niceeval.render._uncertainty",
        "folded_power": "niceeval.render._uncertainty",
        "folded_rate": "niceeval.render._uncertainty",
        "interval_text": "niceeval.render._uncertainty",
        "percent": "niceeval.render._uncertainty",
        "power_text": "niceeval.render._uncertainty",
        "rate_over_cases": "niceeval.render._uncertainty",
        "runs_rate": "niceeval.render._uncertainty",
        "suite_power": "niceeval.render._uncertainty",
        "suite_rate": "niceeval.render._uncertainty",
        "weighted_mean_over_cases": "niceeval.render._uncertainty",
        "VariantRow": "niceeval.render._variants",
        "VariantTable": "niceeval.render._variants",
    },
)
