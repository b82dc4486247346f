"""`niceeval sandbox list | enter ID | diff ID | logs ID | stop ID | prune`: the Docker sandboxes niceeval left.

`run --keep-sandbox` keeps a run's containers (named `niceeval-kept-...`); a killed run leaves its own. These
commands find them by label. Only argparse is imported at module level (`niceeval --help` stays fast).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from niceeval.cli._common import EXIT_OK

if TYPE_CHECKING:
    from niceeval.sandbox import FoundSandbox


def add_sandbox_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`sandbox list | enter | diff | logs | stop | prune`."""
    sandbox = commands.add_parser("sandbox", help="list, open, diff, stop and prune the Docker sandboxes niceeval left")
    actions = sandbox.add_subparsers(dest="sandbox_command", metavar="COMMAND", required=True)
    listing = actions.add_parser(
        "list", help="every sandbox container (running, kept by --keep-sandbox, or left) and every built image"
    )
    listing.set_defaults(handler=_list)
    enter = actions.add_parser("enter", help="a shell in the sandbox's workspace (or run COMMAND there)")
    enter.add_argument("id", metavar="ID", help="container id (a unique prefix is enough)")
    enter.add_argument("command", metavar="COMMAND", nargs=argparse.REMAINDER, help="instead of a shell")
    enter.set_defaults(handler=_enter)
    for name, help_text, handler in (
        ("diff", "what changed in the kept workspace since its fixture", _diff),
        ("logs", "the logs of the sandbox's services", _logs),
        ("stop", "remove the sandbox's containers", _stop),
    ):
        action = actions.add_parser(name, help=help_text)
        action.add_argument("id", metavar="ID", help="container id (a unique prefix is enough)")
        action.set_defaults(handler=handler)
    prune = actions.add_parser("prune", help="remove every container, folder and built image niceeval left")
    prune.add_argument("--running-too", action="store_true", help="also those of niceeval runs still running")
    prune.set_defaults(handler=_prune)


def _list(args: argparse.Namespace) -> int:
    import anyio

    from niceeval.sandbox import find_built_images, find_sandboxes

    found = anyio.run(find_sandboxes)
    if not found:
        print("no sandbox containers")
    else:
        print(f"{'ID':<12}  {'STATE':<7}  {'SUITE RUN':<12}  {'ATTEMPT':>7}  {'SERVICES':>8}  EVAL / WORKSPACE")
    for sandbox in found:
        print(
            f"{sandbox.short_id:<12}  {sandbox.state:<7}  {sandbox.suite_run:<12}  {sandbox.attempt:>7}  "
            f"{len(sandbox.services):>8}  {sandbox.eval_id}\n{'':>54}{sandbox.workspace or '-'}"
        )
    images = anyio.run(find_built_images)
    if images:
        print(f"\n{'BUILT IMAGE':<32}  {'SIZE':>8}  BUILD TIME")
    for image in images:
        took = "-" if image.build_seconds is None else f"{image.build_seconds:g} s"
        print(f"{image.ref:<32}  {image.size_bytes / 1e6:>5.0f} MB  {took}")
    return EXIT_OK


def _found(ref: str) -> FoundSandbox:
    import anyio

    from niceeval.sandbox import find_sandbox

    return anyio.run(find_sandbox, ref)


def _enter(args: argparse.Namespace) -> int:
    import subprocess

    from niceeval.sandbox import enter_argv

    return subprocess.run(enter_argv(_found(args.id), list(args.command)), check=False).returncode


def _diff(args: argparse.Namespace) -> int:
    import anyio

    from niceeval.sandbox import kept_diff

    diff = anyio.run(kept_diff, _found(args.id))
    print(diff.text or "no changes", end="" if diff.text.endswith("\n") else "\n")
    return EXIT_OK


def _logs(args: argparse.Namespace) -> int:
    import anyio

    from niceeval.sandbox import sandbox_logs

    print(anyio.run(sandbox_logs, _found(args.id)))
    return EXIT_OK


def _stop(args: argparse.Namespace) -> int:
    import anyio

    from niceeval.sandbox import stop_sandbox

    sandbox = _found(args.id)
    anyio.run(stop_sandbox, sandbox)
    print(f"removed sandbox {sandbox.short_id} ({len(sandbox.services)} services); its folder: {sandbox.workspace}")
    return EXIT_OK


def _prune(args: argparse.Namespace) -> int:
    import functools

    import anyio

    from niceeval.sandbox import prune_sandboxes

    pruned = anyio.run(functools.partial(prune_sandboxes, running_too=args.running_too))
    print(f"removed {pruned.containers} containers, {pruned.folders} folders, {pruned.images} built images")
    return EXIT_OK
