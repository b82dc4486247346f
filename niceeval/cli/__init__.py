"""The `niceeval` command line. `main` is the console script's entry point; everything else is private.

Layout: `_main` builds the parser once and dispatches; `_common` declares the flags several commands share, once;
each other module is one command group (`_run`: run, list, rescore; `_store`: runs, show, diff, export, report,
gc; `_cases`, `_calibrate`, `_github`, `_project`: init, cache, view, testing). Only argparse is imported at module
level anywhere here, so `niceeval --help` stays fast; commands import what they need when they run.

Design: docs/design/cli.md
"""

from niceeval.cli._main import main

__all__ = ["main"]
