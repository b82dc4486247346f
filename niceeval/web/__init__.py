"""The results viewer behind `niceeval view`: a Starlette app over the results store.

Pages are rendered on the server (Jinja2, autoescaped), charts are SVG drawn on the server, and the few
scripts are static files shipped here: the viewer works offline and runs no inline script.
"""

from niceeval.web._app import ViewerSettings, create_app
from niceeval.web._security import Access

__all__ = ["Access", "ViewerSettings", "create_app"]
