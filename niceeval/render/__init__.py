"""What the HTML report and the viewer both render: one run in full, judge counts, the variants table, the
templates and filters, the stylesheet. Not a user's API: `niceeval.report` and `niceeval.web` import it, and
neither imports the other.

`environment(room)` gives a room's pages (its own `templates/` folder) over the shared parts (this package's
`templates/`: `_macros.html`, `_run_detail.html`); `STATIC_DIR` holds the stylesheet and the icon both use.
Nothing here imports a web server. Jinja2 loads on first use: the console and the JSON report collect the
variants table without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from niceeval._core.lazy import lazy_getattr
from niceeval.render._judging import JudgeModelUse
from niceeval.render._rounds import Round, commands, rounds
from niceeval.render._variants import VariantRow, VariantTable

if TYPE_CHECKING:
    from niceeval.render._templates import STATIC_DIR, TEXT_LIMIT, environment, when

__all__ = [
    "STATIC_DIR",
    "TEXT_LIMIT",
    "JudgeModelUse",
    "Round",
    "VariantRow",
    "VariantTable",
    "commands",
    "environment",
    "rounds",
    "when",
]

__getattr__ = lazy_getattr(
    __name__, {name: "niceeval.render._templates" for name in ("STATIC_DIR", "TEXT_LIMIT", "environment", "when")}
)
