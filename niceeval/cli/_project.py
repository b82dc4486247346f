"""The project's own commands: `niceeval init`, `niceeval cache clear`, `niceeval view`, `niceeval testing serve`.

Only argparse is imported at module level (`niceeval --help` stays fast).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from niceeval.cli._common import EXIT_OK, add_config_flag, add_store_flag, project_config


def add_project_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`init`, `cache clear`, `view`, `testing serve`."""
    init = commands.add_parser("init", help="write a starter niceeval.config.py and one eval")
    init.set_defaults(handler=_init)

    cache_cmd = commands.add_parser("cache", help="manage the judge verdict cache")
    cache_commands = cache_cmd.add_subparsers(dest="cache_command", metavar="COMMAND", required=True)
    clear = cache_commands.add_parser("clear", help="delete every cached judge verdict")
    add_config_flag(clear)
    clear.set_defaults(handler=_cache_clear)

    view = commands.add_parser("view", help="browse stored results in a web viewer (127.0.0.1 by default)")
    view.add_argument("--host", default="127.0.0.1", help="address to listen on; other than loopback needs a token")
    view.add_argument("--port", type=int, default=7575, help="port (0 picks a free one)")
    view.add_argument("--token", help="access token (default: generated when the host is not loopback)")
    view.add_argument("--open", dest="open_browser", action="store_true", help="open it in the default browser")
    add_config_flag(view)
    add_store_flag(view)
    view.set_defaults(handler=_view)

    testing = commands.add_parser("testing", help="tools for testing agents offline")
    testing_commands = testing.add_subparsers(dest="testing_command", metavar="COMMAND", required=True)
    serve = testing_commands.add_parser(
        "serve", help="serve a local OpenAI/Anthropic-compatible API with scripted replies (127.0.0.1 only)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="127.0.0.1 (default) or ::1")
    serve.add_argument("--port", type=int, default=8808, help="port (0 picks a free one)")
    serve.add_argument("--latency", type=float, default=0.0, help="seconds added before every answer")
    serve.add_argument(
        "--script", metavar="MODULE:NAME", help="a script (list of replies or function of the request); default: echo"
    )
    serve.set_defaults(handler=_serve)


def _init(args: argparse.Namespace) -> int:
    from niceeval.cli._init_template import write_starter

    for line in write_starter(Path.cwd()):
        print(line)
    return EXIT_OK


def _cache_clear(args: argparse.Namespace) -> int:
    from niceeval.judge._runtime import JudgeCache, default_cache_path

    config = project_config(args)
    path = default_cache_path(config.root)
    removed = 0
    if path.exists():
        with JudgeCache(path) as cache:
            removed = cache.clear()
    print(f"removed {removed} cached verdicts from {path}")
    return EXIT_OK


def _serve(args: argparse.Namespace) -> int:
    import importlib

    from niceeval._core.errors import UsageError
    from niceeval.testing import serve

    script = None
    if args.script:
        module_name, _, attribute = args.script.partition(":")
        if not attribute:
            raise UsageError(f"--script takes MODULE:NAME (e.g. my_scripts:replies), got {args.script!r}.")
        sys.path.insert(0, str(Path.cwd()))
        try:
            script = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as exc:
            raise UsageError(f"--script {args.script}: {exc}") from None
    try:
        serve(host=args.host, port=args.port, script=script, latency=args.latency)
    except OSError as exc:
        where = f"{args.host}:{args.port}"
        raise UsageError(f"cannot listen on {where}: {exc.strerror}; pick another --port (0 = any free)") from None
    return EXIT_OK


def _view(args: argparse.Namespace) -> int:
    from niceeval._core.errors import ConfigError, UsageError
    from niceeval._run.storing import StoreRequest, store_location
    from niceeval.store import Store
    from niceeval.web._serve import ServeOptions, serve

    config = project_config(args)
    location = store_location(StoreRequest(flag=args.store, configured=config.store, root=config.root))
    if location is None:
        raise ConfigError("the results store is off in the config (store=False); pass --store URL to view one.")
    with Store.open(location, root=config.root) as store:  # created when missing: cases can be written first
        options = ServeOptions(
            store=store, host=args.host, port=args.port, token=args.token, open_browser=args.open_browser
        )
        try:
            serve(options)
        except OSError as exc:
            where = f"{args.host}:{args.port}"
            raise UsageError(f"cannot listen on {where}: {exc.strerror}; pick another --port (0 = any free)") from None
    return EXIT_OK
