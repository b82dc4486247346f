"""The results viewer behind `niceeval view`: a Starlette app over the results store.

Pages are rendered on the server (Jinja2, autoescaped), charts are SVG drawn on the server, and the few
scripts are static files shipped here: the viewer works offline and runs no inline script. What the viewer shares
with the HTML report (a run in full, the variants table, the stylesheet) is `niceeval.render`'s.

The public names load on first use, so importing the package costs nothing until the viewer is built.
`niceeval view` starts it through `niceeval.web._serve`, the package's one door for the command line.

Design: docs/design/viewer.md
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from niceeval._core.lazy import lazy_getattr

if TYPE_CHECKING:
    from niceeval.web._app import ViewerSettings, create_app
    from niceeval.web._security import Access

__all__ = ["Access", "ViewerSettings", "create_app"]

__getattr__ = lazy_getattr(__name__, {"Access": "._security", "ViewerSettings": "._app", "create_app": "._app"})
