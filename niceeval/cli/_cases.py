"""The command line's part for viewer-written cases: `niceeval cases export`, and finding them for run and list.

Only argparse is imported at module level (`niceeval --help` stays fast).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from niceeval.cli._common import add_config_flag, add_store_flag, open_existing_store
from niceeval.cli._from_trace import add_from_trace_command

if TYPE_CHECKING:
    from niceeval._eval.config import Config
    from niceeval._eval.reading import Reading
    from niceeval._run.discovery import Discovery

DEFAULT_EXPORT = Path("evals") / "ui_cases.py"


def add_case_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`niceeval cases export [--to PATH] [--force]` and `niceeval cases from-trace TRACE_ID [--to PATH]`."""
    cases = commands.add_parser("cases", help="test cases written in the viewer, or made from production traces")
    actions = cases.add_subparsers(dest="cases_command", metavar="COMMAND", required=True)
    export = actions.add_parser("export", help="write the viewer's cases as define_eval code (for code review)")
    export.add_argument("--to", type=Path, default=DEFAULT_EXPORT, metavar="PATH", help=f"default {DEFAULT_EXPORT}")
    export.add_argument("--force", action="store_true", help="overwrite PATH when it holds something else")
    add_store_flag(export)
    add_config_flag(export)
    export.set_defaults(handler=_export)
    add_from_trace_command(actions)


def discover_with_cases(config: Config, args: argparse.Namespace, reading: Reading | None = None) -> Discovery:
    """The code evals under the command line's paths (a dataset file read as `reading` says), then the store's
    cases it asks for (ids `ui::NAME`)."""
    from niceeval._run.discovery import Discovery, discover
    from niceeval._run.storing import StoreRequest, store_location
    from niceeval._run.ui_cases import add_ui_cases, split_targets

    targets = split_targets(args.paths, config.evals)
    cases = Discovery()
    request = StoreRequest(flag=getattr(args, "store", None), configured=config.store, root=config.root)
    add_ui_cases(cases, config.root, store_location(request), targets.cases)
    paths = targets.paths
    if cases.evals and not args.paths:  # a project may hold only viewer-written cases, no evals/ folder yet
        paths = [p for p in paths if (config.root / p.partition("::")[0]).exists()]
    found = discover(config.root, paths, reading)
    found.evals += cases.evals
    found.errors += cases.errors
    return found


def _export(args: argparse.Namespace) -> int:
    from niceeval._core.errors import ConfigError
    from niceeval.store.cases import CaseBook, cases_module

    with open_existing_store(args) as store:
        cases = [stored.case for stored in CaseBook(store).cases()]
    if not cases:
        print("no cases in the results store yet; write them in `niceeval view` (Cases tab).")
        return 0
    source = cases_module(cases)
    target: Path = args.to
    if target.exists() and target.read_text(encoding="utf-8") != source and not args.force:
        raise ConfigError(f"{target} exists and holds something else; pass --force to overwrite it, or --to PATH.")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source, encoding="utf-8")
    names = ", ".join(case.name for case in cases)
    print(f"wrote {len(cases)} case{'s' if len(cases) != 1 else ''} to {target}: {names}")
    print("they still run as ui::NAME from the store too; delete them in the viewer once the file is reviewed.")
    return 0
