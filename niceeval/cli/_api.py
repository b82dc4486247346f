"""`niceeval.run()` and `niceeval.run_async()`: the suite `niceeval run` runs, from Python, as a `SuiteResult`.

The options are `niceeval run`'s flags, by their names (`runs=3`, `tag=["smoke"]`, `exitfirst=True`): each is
turned back into its flag and parsed by the `run` command's own parser, so the API takes exactly what the command
takes, checked by the same code. Nothing here exits the process: a refused run raises, a finished one returns.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from niceeval._core.errors import UsageError
from niceeval.cli._run import add_run_commands

if TYPE_CHECKING:
    from niceeval._core.results import RunResult
    from niceeval._core.summary import EvalTally, PlannedEval, Problem, SuiteSummary
    from niceeval.cli._suite_result import SuiteResult

Paths = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
NOT_FOR_PYTHON = {"dry_run": "dry_run prints a plan and runs nothing: use `niceeval run --dry-run` instead"}
"""`run` flags the Python API refuses, each with what to do instead."""


class _OptionsParser(argparse.ArgumentParser):
    """`run`'s parser, raising where the command would print its usage and exit 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"niceeval.run(): {message} (the options are `niceeval run`'s flags, by name)")


def _run_parser() -> argparse.ArgumentParser:
    top: argparse.ArgumentParser = _OptionsParser(prog="niceeval")  # its subparsers are _OptionsParsers too
    commands = top.add_subparsers(dest="command")
    add_run_commands(commands)
    return commands.choices["run"]


def option_names() -> list[str]:
    """The options `niceeval.run()` takes: `niceeval run`'s flags, as keyword names."""
    return sorted(_actions(_run_parser()))


def _actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    named = {action.dest: action for action in parser._actions if action.dest != "help"}
    return {name: action for name, action in named.items() if name not in NOT_FOR_PYTHON}


def run_arguments(paths: Paths | None, options: dict[str, object]) -> argparse.Namespace:
    """The `argparse.Namespace` `niceeval run` would make from the flags `options` name.

    Raises:
        TypeError: an option `niceeval run` has no flag for (the message lists those it has).
        UsageError: a value the flag refuses (the flag's own message).
    """
    parser = _run_parser()
    actions = _actions(parser)
    store = options.get("store")
    if isinstance(store, bool):  # `store=False`: --no-store; `store=True`: the config's store, as without --store
        options = {k: v for k, v in options.items() if k != "store"} | ({} if store else {"no_store": True})
    unknown = sorted(set(options) - set(actions))
    if unknown:
        reasons = [NOT_FOR_PYTHON[name] for name in unknown if name in NOT_FOR_PYTHON]
        valid = ", ".join(name for name in sorted(actions) if name != "paths")
        raise TypeError(
            f"niceeval.run() got unknown option(s) {', '.join(unknown)}"
            + (f" ({'; '.join(reasons)})" if reasons else "")
            + f". Its options are `niceeval run`'s flags, by name: {valid}"
        )
    argv = [token for name, value in options.items() for token in _tokens(actions[name], name, value)]
    args = parser.parse_args([*argv, "--", *_path_list(paths)])
    args.command = "run"
    args.process_ends = False
    return args


def _path_list(paths: Paths | None) -> list[str]:
    if paths is None:
        return []
    if isinstance(paths, str | os.PathLike):
        return [os.fspath(paths)]
    return [os.fspath(path) for path in paths]


def _tokens(action: argparse.Action, name: str, value: object) -> list[str]:
    """The command-line tokens that give the flag of `action` the value `value`."""
    flag = max(action.option_strings, key=len)
    if value is None:
        return []
    if action.nargs == 0:
        if not isinstance(value, bool):
            raise UsageError(f"niceeval.run(): {name}= takes True or False (the flag {flag}), got {value!r}")
        return [flag] if value else []
    if isinstance(action, argparse._AppendAction):
        values = [value] if isinstance(value, str | int | float | os.PathLike) else value
        if not isinstance(values, Sequence):
            raise UsageError(f"niceeval.run(): {name}= takes a value or a list of them (the flag {flag})")
        return [token for item in values for token in (flag, _text(item))]
    if action.nargs == "?" and isinstance(value, bool):  # `resume=True`: the flag alone (its default value)
        return [flag] if value else []
    return [flag, _text(value)]


def _text(value: object) -> str:
    """A value as written on the command line (`min_pass_at_k=(3, 0.9)` as `3:0.9`)."""
    if isinstance(value, tuple):
        return ":".join(str(item) for item in value)
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


class KeptRuns:
    """A reporter that keeps every finished run and every eval's tally, for the `SuiteResult` (the command keeps
    neither: its summary is folded as evals finish)."""

    def __init__(self) -> None:
        self.runs: list[RunResult] = []
        self._order: dict[str, int] = {}
        self._tallies: dict[str, EvalTally] = {}

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        self.runs.clear()
        self._tallies.clear()
        self._order = {planned.id: position for position, planned in enumerate(plan)}

    def run_finished(self, result: RunResult) -> None:
        self.runs.append(result)

    def eval_finished(self, tally: EvalTally, summary: SuiteSummary) -> None:
        self._tallies[tally.eval.id] = tally

    def finish(self, summary: SuiteSummary) -> None:
        """Nothing to write: the runs and tallies are read from `runs` and `tallies()`."""
        for tally in summary.unfinished:
            self._tallies.setdefault(tally.eval.id, tally)

    def tallies(self) -> list[EvalTally]:
        """Every eval's tally (those that never started too, when the suite stopped early), in plan order."""
        last = len(self._order)
        return sorted(self._tallies.values(), key=lambda tally: self._order.get(tally.eval.id, last))


async def run_parsed(args: argparse.Namespace) -> SuiteResult:
    """Run the suite `args` describe on the running loop, as `niceeval run` does, and return what it came to."""
    from niceeval._run.suite import run_suite
    from niceeval.cli._suite import conclude_suite, prepare_suite, selected_evals
    from niceeval.cli._suite_result import SuiteResult

    config, discovery, entries = selected_evals(args)
    kept = KeptRuns()
    suite = prepare_suite(config, discovery, entries, args, extra=[kept])
    summary = await run_suite(suite.entries, suite.errors, suite.options, suite.reporters)
    code = conclude_suite(suite, summary)
    run_id = suite.sink.run_id if suite.sink else None
    return SuiteResult.of(summary, kept.runs, kept.tallies(), run_id=run_id, exit_code=code)


def loop_running() -> bool:
    """Whether this thread runs an event loop (a notebook's, or an async caller's: asyncio or trio)."""
    import asyncio

    import anyio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        try:
            anyio.get_current_task()
        except RuntimeError:  # no loop of any kind (anyio's NoEventLoopError, or sniffio's on older anyio)
            return False
    return True


def run(
    paths: Paths | None = None,
    *,
    runs: int | str | None = None,
    concurrency: int | None = None,
    store: str | os.PathLike[str] | bool | None = None,
    **options: object,
) -> SuiteResult:
    """Run a suite from Python, as `niceeval run` would, and return its `SuiteResult`.

    Works in a script and inside a running event loop (a notebook's): there the suite runs on a loop of its own
    in a worker thread, and this call waits for it. It never exits the process.

    Args:
        paths: Eval files or folders, or `file.py::name` (default: the config's `evals`).
        runs: `--runs`: N, `"auto"` or `"LOW..HIGH"`.
        concurrency: `--concurrency`: runs at once (default: the config's).
        store: `--store`: a SQLite path or `postgresql://...` URL; False for `--no-store`; None or True: the
            config's store (`.niceeval/results.db` unless it says otherwise).
        **options: Any other flag of `niceeval run`, by its name: `keyword="refund"` (`-k`), `tag=["smoke"]`,
            `strict=True`, `timeout=60`, `min_pass_at_k="3:0.9"`, `baseline="latest"`, `json="report.json"`, ...

    Returns:
        The summary, every run's `RunResult`, the stored suite run's id and the exit code the command would give.

    Raises:
        TypeError: an option that `niceeval run` has no flag for; the message lists those it has.
        UsageError: a value its flag refuses, or a run the command refuses before starting (no evals found).
    """
    import anyio

    args = run_arguments(paths, {**options, "runs": runs, "concurrency": concurrency, "store": store})
    if loop_running():
        from anyio.from_thread import start_blocking_portal

        with start_blocking_portal() as portal:
            return portal.call(run_parsed, args)
    return anyio.run(run_parsed, args)


async def run_async(
    paths: Paths | None = None,
    *,
    runs: int | str | None = None,
    concurrency: int | None = None,
    store: str | os.PathLike[str] | bool | None = None,
    **options: object,
) -> SuiteResult:
    """`run()`, awaited on the caller's event loop (asyncio or trio, through anyio).

    Takes the same arguments as `run()` and returns the same `SuiteResult`.
    """
    args = run_arguments(paths, {**options, "runs": runs, "concurrency": concurrency, "store": store})
    return await run_parsed(args)
