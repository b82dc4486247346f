"""The results viewer behind `niceeval view`: a Starlette app over the results store.

Pages are rendered on the server (Jinja2, autoescaped), charts are SVG drawn on the server, and the few
scripts are static files shipped here: the viewer works offline and runs no inline script.

The public names load on first use: the HTML report renders with this package's templates
(`niceeval.web._templates`) and must not pay for importing Starlette.

Design: docs/design/viewer.md
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from niceeval.web._app import ViewerSettings, create_app
    from niceeval.web._security import Access

_HOMES = {"Access": "niceeval.web._security", "ViewerSettings": "niceeval.web._app", "create_app": "niceeval.web._app"}

__all__ = ["Access", "ViewerSettings", "create_app"]


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'niceeval.web' has no attribute {name!r}")
