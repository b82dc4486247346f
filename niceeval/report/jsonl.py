"""`--jsonl PATH|-`: one JSON object per line, written and flushed as the suite goes, for dashboards and tools.

Lines, each with an `event` key: `suite.started` (the plan), `run.finished` (the run as in the JSON report, with
`eval_id`), `suite.finished` (counts, spend, exit code, and why it stopped early, if it did).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from niceeval._core.results import RunResult
from niceeval._core.summary import PlannedEval, Problem, SuiteSummary
from niceeval._core.text import scrub
from niceeval.report.json_report import run_json


class JsonlReporter:
    """Writes the suite's events as JSON lines to `target` (a path, or `-` for standard output).

    Args:
        target: Where to write; `-` is stdout (then the console report goes to stderr).
    """

    def __init__(self, target: str | Path) -> None:
        self.target = str(target)
        self._out: IO[str] | None = None

    def _line(self, data: dict[str, Any] | bytes) -> None:
        assert self._out is not None
        text = data.decode() if isinstance(data, bytes) else json.dumps(scrub(data), ensure_ascii=False)
        self._out.write(text + "\n")
        self._out.flush()

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        """Take the plan and the problems found while loading it."""
        if self.target == "-":
            self._out = sys.stdout
        else:
            path = Path(self.target)
            path.parent.mkdir(parents=True, exist_ok=True)
            self._out = path.open("w", encoding="utf-8")
        self._line(
            {
                "event": "suite.started",
                "evals": [{"id": p.id, "file": p.file, "line": p.line, "runs": p.runs} for p in plan],
                "runs": sum(p.runs for p in plan),
                "problems": [{"location": p.location, "message": p.message} for p in problems],
            }
        )

    def run_finished(self, result: RunResult) -> None:
        """Take one finished run."""
        run = run_json(result)
        self._line(
            b'{"event": "run.finished", "eval_id": ' + json.dumps(result.eval_id).encode() + b', "run": ' + run + b"}"
        )

    def finish(self, summary: SuiteSummary) -> None:
        """Finish the report from the suite's summary."""
        if self._out is None:
            return
        self._line(
            {
                "event": "suite.finished",
                "exit_code": summary.exit_code,
                "evals": summary.eval_counts(),
                "runs": summary.runs_done,
                "duration_s": round(summary.duration_s, 6),
                "interrupted": summary.interrupted,
                "stopped": summary.stopped,
                "not_started": summary.not_started,
                "halted": summary.halted,
                "not_counted": {"infra": summary.infra},
                "agent_spend": summary.agent_spend.model_dump(),
                "judge_spend": summary.judge_spend.model_dump(),
                "problems": [{"location": p.location, "message": p.message} for p in summary.problems],
            }
        )
        if self._out is not sys.stdout:
            self._out.close()
        self._out = None
