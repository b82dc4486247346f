"""The `niceeval` command line. `main` is the console script's entry point; everything else is private.

Layout: `_main` builds the parser once and dispatches; `_common` declares the flags several commands share, once;
each other module is one command group (`_run`: run, list, rescore; `_store`: runs, show, diff, export, report,
gc; `_cases`, `_calibrate`, `_github`, `_project`: init, cache, view, testing). Only argparse is imported at module
level anywhere here, so `niceeval --help` stays fast; commands import what they need when they run.

Beside it, the command's `run` from Python: `run`, `run_async` and the `SuiteResult` they return (`_api`,
`_suite_result`), loaded on first use and re-exported as `niceeval.run`, `niceeval.run_async`, `niceeval.SuiteResult`.

Design: docs/design/cli.md
"""

from typing import TYPE_CHECKING

from niceeval._core.lazy import lazy_getattr
from niceeval.cli._main import main

if TYPE_CHECKING:
    from niceeval.cli._api import run, run_async
    from niceeval.cli._suite_result import SuiteResult

__all__ = ["SuiteResult", "main", "run", "run_async"]

_HOMES = {"run": "._api", "run_async": "._api", "SuiteResult": "._suite_result"}

__getattr__ = lazy_getattr(__name__, _HOMES)
