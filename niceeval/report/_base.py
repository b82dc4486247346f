"""The reporter extension point, and the guard that keeps one broken reporter from ending a suite."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from typing import Protocol

from niceeval._core.results import RunResult
from niceeval._core.summary import PlannedEval, Problem, SuiteSummary


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
    """Fans calls out to reporters; a reporter that raises is reported once on stderr and dropped."""

    def __init__(self, reporters: Sequence[Reporter]) -> None:
        self._reporters = list(reporters)

    def _each(self, method: str, *args: object) -> None:
        for reporter in list(self._reporters):
            try:
                getattr(reporter, method)(*args)
            except (Exception, SystemExit) as exc:  # rich exits on a closed stdout (`niceeval run | head`)
                self._reporters.remove(reporter)
                with contextlib.suppress(OSError):
                    print(
                        f"niceeval: reporter {type(reporter).__name__} failed in {method}() and was disabled: "
                        f"{type(exc).__name__}: {exc}",
                        file=sys.stderr,
                    )

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        self._each("start", plan, problems)

    def run_finished(self, result: RunResult) -> None:
        self._each("run_finished", result)

    def finish(self, summary: SuiteSummary) -> None:
        self._each("finish", summary)
