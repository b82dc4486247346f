"""`niceeval import FILE`: write a peer's suite (promptfoo, pydantic-evals, Inspect, OpenAI Evals) as an eval module."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from niceeval.cli._common import EXIT_USAGE, add_config_flag, add_reading_flags, project_config, reading_of


def add_import_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`niceeval import FILE [--to PATH] [--force]`."""
    command = commands.add_parser(
        "import",
        help="write a promptfoo config, pydantic-evals dataset, Inspect samples or OpenAI Evals definition as an "
        "eval module",
    )
    command.add_argument("file", type=Path, metavar="FILE", help="the suite file (YAML, JSON, JSONL or CSV)")
    command.add_argument("--to", type=Path, metavar="PATH", help="the module to write (default evals/<FILE stem>.py)")
    command.add_argument("--force", action="store_true", help="overwrite PATH when it exists")
    add_reading_flags(command)
    add_config_flag(command)
    command.set_defaults(handler=_import)


def _import(args: argparse.Namespace) -> int:
    from niceeval._eval.importing import import_suite

    config = project_config(args)
    source: Path = args.file if args.file.is_absolute() else Path.cwd() / args.file
    if not source.is_file():
        print(f"niceeval: error: {args.file} is not a file; pass the suite file to import.", file=sys.stderr)
        return EXIT_USAGE
    target: Path = args.to or config.root / "evals" / f"{source.stem}.py"
    if target.exists() and not args.force:
        print(f"niceeval: error: {target} exists; pass --force to overwrite it, or --to PATH.", file=sys.stderr)
        return EXIT_USAGE
    try:
        reading = reading_of(args, [str(source)], config.root)
    except ValueError as exc:
        print(f"niceeval: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    imported = import_suite(source, config.root, reading)
    for note in imported.notes:
        print(f"niceeval: not mapped: {note}", file=sys.stderr)
    for problem in imported.problems:
        print(f"niceeval: left out: {problem}", file=sys.stderr)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(imported.code, encoding="utf-8")
    print(f"wrote {target} ({imported.cases} cases); run it with `niceeval run {target}`")
    return EXIT_USAGE if imported.problems else 0
