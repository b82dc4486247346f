"""The parser, built once from the command groups, and the dispatch that turns errors into exit codes."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from niceeval.cli._calibrate import add_calibrate_command
from niceeval.cli._cases import add_case_commands
from niceeval.cli._common import EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_USAGE
from niceeval.cli._exp import add_exp_commands
from niceeval.cli._import import add_import_command
from niceeval.cli._judge import add_judge_commands
from niceeval.cli._power import add_power_command
from niceeval.cli._project import add_project_commands
from niceeval.cli._run import add_run_commands
from niceeval.cli._sandbox import add_sandbox_commands
from niceeval.cli._simulate import add_simulate_commands
from niceeval.cli._store import add_store_commands
from niceeval.cli._watch import add_watch_command

AddCommands = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

GROUPS: dict[AddCommands, tuple[str, ...]] = {
    add_run_commands: ("run", "list", "rescore"),
    add_store_commands: ("runs", "show", "diff", "export", "report", "store", "gc"),
    add_case_commands: ("cases",),
    add_calibrate_command: ("calibrate",),
    add_judge_commands: ("judge",),
    add_power_command: ("power",),
    add_import_command: ("import",),
    add_project_commands: ("init", "cache", "view", "testing"),
    add_sandbox_commands: ("sandbox",),
    add_simulate_commands: ("simulate",),
    add_exp_commands: ("exp", "accept"),
    add_watch_command: ("watch",),
}
"""Each command group and the commands it adds (a test checks the names against the full parser)."""


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The `niceeval` parser: every command, or, when `argv` starts with a command, only its group's.

    That command parses the same either way; declaring the other groups' flags would cost every start.
    """
    parser = argparse.ArgumentParser(prog="niceeval", description="Test LLM apps and AI agents.")
    parser.add_argument("--version", action=_VersionAction, nargs=0, help="show niceeval's version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    named = [group for group, names in GROUPS.items() if argv and argv[0] in names]
    for add_commands in named or GROUPS:
        add_commands(commands)
    return parser


class _VersionAction(argparse.Action):
    """`--version`: reads the installed version only when asked (importing importlib.metadata slows start-up)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: object, values: object, flag: object = None) -> None:
        print(f"niceeval {_version()}")
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("niceeval")
    except PackageNotFoundError:
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `niceeval` command; returns the exit code."""
    parser = build_parser(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    from niceeval._core.errors import NiceevalError  # after parsing: `--help` stays fast

    args.process_ends = argv is None  # the command itself: it exits when the handler returns
    terminated = _terminate_as_interrupt()
    try:
        code: int = args.handler(args)
    except NiceevalError as exc:
        print(f"niceeval: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("niceeval: terminated" if terminated else "niceeval: interrupted", file=sys.stderr)
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    finally:
        terminated.restore()  # `main()` called in-process (tests, scripts) leaves the caller's handler in place
    _quiet_if_stdout_closed()
    _leave_stray_threads(code)
    if argv is None:  # the command itself, about to exit (in-process callers pass argv and keep their collector)
        _light_teardown()
    return code


def _light_teardown() -> None:
    """Spare the interpreter's exit its full garbage collections (several passes over every object start-up made).

    What is garbage now is collected first, so its finalizers run as before; what is still alive is frozen out of
    the passes teardown makes (Python never promised finalizers there). Its cost: bench/NOTES.md, "Start-up".
    """
    import gc

    gc.collect()
    gc.freeze()


class _Terminated:
    """Whether SIGTERM arrived (truthy once it has)."""

    def __init__(self) -> None:
        self.arrived = False
        self.previous: Any = None
        """The SIGTERM handler before ours (None: ours was not installed)."""

    def __bool__(self) -> bool:
        return self.arrived

    def restore(self) -> None:
        if self.previous is not None:
            import signal

            signal.signal(signal.SIGTERM, self.previous)


def _terminate_as_interrupt() -> _Terminated:
    """SIGTERM (what CI systems and container runtimes send) does what Ctrl-C does: the running suite is cancelled,
    the partial reports are written, the stored suite run is marked `interrupted`; the exit code is 143."""
    import signal
    import threading

    from niceeval._core.stopping import clear_terminated, mark_terminated

    terminated = _Terminated()
    clear_terminated()
    if threading.current_thread() is not threading.main_thread():
        return terminated

    def on_term(signum: int, frame: FrameType | None) -> None:
        terminated.arrived = True
        mark_terminated()
        interrupt = signal.getsignal(signal.SIGINT)  # asyncio's while a suite runs: it cancels the suite's task
        if callable(interrupt) and interrupt is not on_term:
            interrupt(signal.SIGINT, frame)  # Python's own handler raises KeyboardInterrupt
            return
        raise KeyboardInterrupt  # SIGINT ignored or left to the system: stop here all the same

    terminated.previous = signal.signal(signal.SIGTERM, on_term)
    return terminated


def _leave_stray_threads(code: int) -> None:
    """Exit now, naming them, when an eval left a non-daemon thread running (Python would wait for it forever)."""
    if "niceeval._run.stray_threads" not in sys.modules:
        return
    from niceeval._run.stray_threads import stray_threads

    strays = stray_threads()
    if not strays:
        return
    print(
        f"niceeval: warning: {len(strays)} thread(s) an eval started are still running: {', '.join(strays)}. "
        "The reports are complete; niceeval exits without waiting for them (start such threads with daemon=True, "
        "or stop them before the eval returns).",
        file=sys.stderr,
    )
    import os

    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def _quiet_if_stdout_closed() -> None:
    """`niceeval run | head` closes our stdout early: exit with the suite's code, without a traceback at exit."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
