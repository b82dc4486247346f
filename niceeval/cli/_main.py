"""The parser, built once from every command group, and the dispatch that turns errors into exit codes."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from niceeval.cli._calibrate import add_calibrate_command
from niceeval.cli._cases import add_case_commands
from niceeval.cli._common import EXIT_INTERRUPTED, EXIT_USAGE
from niceeval.cli._project import add_project_commands
from niceeval.cli._run import add_run_commands
from niceeval.cli._store import add_store_commands


def build_parser() -> argparse.ArgumentParser:
    """The `niceeval` parser with every command."""
    parser = argparse.ArgumentParser(prog="niceeval", description="Test LLM apps and AI agents.")
    parser.add_argument("--version", action="version", version=f"niceeval {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_run_commands(commands)
    add_store_commands(commands)
    add_case_commands(commands)
    add_calibrate_command(commands)
    add_project_commands(commands)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("niceeval")
    except PackageNotFoundError:
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `niceeval` command; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    from niceeval._core.errors import NiceevalError  # after parsing: `--help` stays fast

    try:
        code: int = args.handler(args)
    except NiceevalError as exc:
        print(f"niceeval: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("niceeval: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    _quiet_if_stdout_closed()
    return code


def _quiet_if_stdout_closed() -> None:
    """`niceeval run | head` closes our stdout early: exit with the suite's code, without a traceback at exit."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
