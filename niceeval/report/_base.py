"""The reporter extension point, and the guard that keeps one broken reporter from ending a suite."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from typing import Protocol

from niceeval._core.results import RunResult
from niceeval._core.summary import EvalTally, PlannedEval, Problem, SuiteSummary


class Reporter(Protocol):
    """A sink of finished runs. Methods are called from the event loop, in order, never concurrently."""

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        """The suite is about to run `plan`; `problems` were found while loading."""
        ...

    def run_finished(self, result: RunResult) -> None:
        """One run finished (results arrive in completion order, not plan order)."""
        ...

    def finish(self, summary: SuiteSummary) -> None:
        """The suite ended (maybe interrupted: see `summary.interrupted`)."""
        ...


class ReporterSet:
    """Fans calls out to reporters, so that one failing reporter never ends the suite nor loses the others' output.

    A reporter that raises in `start` is dropped (it has nothing to write). One that raises in `run_finished`
    misses that run only: it keeps receiving the others and still writes its report in `finish` (one line on
    stderr names the first failure, `finish` says how many runs it missed). `SystemExit` (rich on a closed
    stdout, `niceeval run | head`) drops the reporter at once.
    """

    def __init__(self, reporters: Sequence[Reporter]) -> None:
        self._reporters = list(reporters)
        self._missed: dict[int, int] = {}
        self._missed_evals: dict[int, int] = {}

    def _each(self, method: str, *args: object) -> None:
        for reporter in list(self._reporters):
            try:
                getattr(reporter, method)(*args)
            except SystemExit as exc:
                self._drop(reporter, method, exc)
            except Exception as exc:
                if method != "run_finished":
                    self._drop(reporter, method, exc)
                    continue
                missed = self._missed[id(reporter)] = self._missed.get(id(reporter), 0) + 1
                if missed == 1:
                    _warn(f"reporter {type(reporter).__name__} failed on a run and left it out: {_describe(exc)}")

    def _drop(self, reporter: Reporter, method: str, exc: BaseException) -> None:
        self._reporters.remove(reporter)
        _warn(f"reporter {type(reporter).__name__} failed in {method}() and was disabled: {_describe(exc)}")

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        self._each("start", plan, problems)

    def run_started(self, eval_id: str, run_index: int) -> None:
        """A run began; only reporters that define `run_started` (live displays) are told."""
        for reporter in list(self._reporters):
            if hasattr(reporter, "run_started"):
                try:
                    reporter.run_started(eval_id, run_index)
                except (Exception, SystemExit) as exc:  # a live display that breaks is dropped, the run goes on
                    self._drop(reporter, "run_started", exc)

    def run_finished(self, result: RunResult) -> None:
        self._each("run_finished", result)

    def eval_finished(self, tally: EvalTally, summary: SuiteSummary) -> None:
        """An eval's last run was reported (`tally` has them all; `summary`, still running, has the suite's gates):
        only reporters that define `eval_finished` (those that write an eval when it is done) are told. One that
        raises misses that eval, as with `run_finished`."""
        for reporter in list(self._reporters):
            if hasattr(reporter, "eval_finished"):
                try:
                    reporter.eval_finished(tally, summary)
                except SystemExit as exc:
                    self._drop(reporter, "eval_finished", exc)
                except Exception as exc:
                    missed = self._missed_evals[id(reporter)] = self._missed_evals.get(id(reporter), 0) + 1
                    if missed == 1:
                        _warn(f"reporter {type(reporter).__name__} failed on an eval and left it out: {_describe(exc)}")

    async def drain(self) -> None:
        """Before `finish`, on the event loop: reporters that write from the loop (the results store on
        PostgreSQL) end their writes there. Only reporters that define `drain` are told."""
        for reporter in list(self._reporters):
            drain = getattr(reporter, "drain", None)
            if drain is not None:
                try:
                    await drain()
                except Exception as exc:  # its `finish` still runs: what it did not write is counted there
                    _warn(f"reporter {type(reporter).__name__} failed in drain(): {_describe(exc)}")

    def finish(self, summary: SuiteSummary) -> None:
        self._each("finish", summary)
        for reporter in self._reporters:
            missed = self._missed.get(id(reporter), 0)
            if missed:
                _warn(f"reporter {type(reporter).__name__} left out {missed} run(s) it failed on (see above)")
            if evals := self._missed_evals.get(id(reporter), 0):
                _warn(f"reporter {type(reporter).__name__} left out {evals} eval(s) it failed on (see above)")


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _warn(message: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # stderr itself may be closed
        print(f"niceeval: {message}", file=sys.stderr)
