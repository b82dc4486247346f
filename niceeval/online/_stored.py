"""A watch session's results in the store: one suite run of kind `online` per session and UTC day.

The suite run is recorded when the session (or its day) starts, with every online eval planned; each scored
trace is one eval run of its eval, numbered in arrival order, its case id the trace id. When the day turns (or the
session stops) the suite run is closed, its plan raised to the runs it holds, and the next day's begins.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime

from niceeval._core.results import RunResult
from niceeval._core.summary import PlannedEval
from niceeval._run.discovery import EvalEntry
from niceeval._run.storing import new_run_id
from niceeval.store import SuiteRunStart
from niceeval.store._recorder import Recorder, SuiteEnd


def utc_today() -> date:
    return datetime.now(UTC).date()


class OnlineRecord:
    """Writes a watch session's online results (from one thread at a time: the watcher's writer).

    Args:
        recorder: The store's recorder.
        start: The session's identity (command, root, git); each day's suite run gets a fresh id from it.
        evals: The online evals, planned in every day's suite run.
        today: The current UTC day (a test's clock).
        clock: Seconds, for each suite run's duration.
    """

    def __init__(
        self,
        recorder: Recorder,
        start: SuiteRunStart,
        evals: Sequence[EvalEntry],
        *,
        today: Callable[[], date] = utc_today,
        clock: Callable[[], float],
    ) -> None:
        self._recorder = recorder
        self._start = start
        self._evals = list(evals)
        self._today = today
        self._clock = clock
        self._day: date | None = None
        self._began = 0.0
        self._runs: Counter[str] = Counter()
        self.suite_run_ids: list[str] = []
        """Every suite run this session wrote, oldest first."""
        self.stored = 0

    def open(self) -> None:
        """Record today's suite run now (status `running` while the session watches), before any result."""
        if self._day is None:
            self._begin(self._today())

    def add(self, results: Sequence[RunResult]) -> None:
        """Store `results` in today's suite run (closing yesterday's first when the day turned)."""
        today = self._today()
        if self._day != today:
            self._end("finished")
            self._begin(today)
        numbered = []
        for result in results:
            numbered.append(result.model_copy(update={"run_index": self._runs[result.eval_id]}))
            self._runs[result.eval_id] += 1
        self._recorder.add(self.suite_run_ids[-1], numbered)
        self.stored += len(numbered)

    def close(self, status: str = "finished") -> None:
        """Close the current suite run (`finished`, or `interrupted`)."""
        self._end("interrupted" if status == "interrupted" else "finished")

    def _begin(self, day: date) -> None:
        run_id = new_run_id()
        self._recorder.begin(self._start.model_copy(update={"id": run_id, "kind": "online"}), self._plan(1))
        self.suite_run_ids.append(run_id)
        self._day, self._began, self._runs = day, self._clock(), Counter()

    def _end(self, status: str) -> None:
        if self._day is None:
            return
        run_id = self.suite_run_ids[-1]
        self._recorder.extend(run_id, self._plan(0))
        end = SuiteEnd(
            status="interrupted" if status == "interrupted" else "finished",
            exit_code=0,
            duration_s=self._clock() - self._began,
        )
        self._recorder.finish(run_id, end)
        self._day = None

    def _plan(self, at_least: int) -> list[PlannedEval]:
        return [
            PlannedEval(
                id=entry.id,
                file=entry.file,
                line=entry.spec.line,
                tags=entry.tags,
                runs=max(self._runs[entry.id], at_least),
            )
            for entry in self._evals
        ]
