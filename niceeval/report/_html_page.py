"""What the HTML report's page holds, bounded: which evals it shows in full, which it only names, which it counts.

A run of 100,000 evals rendered whole made a 350 MB page that Chromium took minutes to open, and its reporter held
a record per eval. The page now shows at most `most_evals` failed evals and `most_evals` others in full (the first
to finish), names every other failed eval in the index with its first miss, and counts the rest by status in one
line that says where to read them. The figures above the index (counts, pass rate, spend, judges, variants) are
folded over every run and do not depend on what is listed.

Kept while the suite runs: the evals in full (their rows and where their rendered runs are in the run spool), the
rows of the failed evals only named (written to a spool of their own as they are done), counts. At the end the
evals in full are put in plan order (the plan walked once, looking up only their ids) within their status.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO, Literal

from niceeval._core.results import RunResult, Spend
from niceeval._core.summary import EvalTally, PlannedEval
from niceeval._core.wording import miss_words
from niceeval.render import eval_points_text, interval_text, runs_rate
from niceeval.report._grouping import Miss, MissGroups, runs_text

MOST_EVALS = 500
"""Failed evals the page shows in full, and as many others (scored, passed, skipped); every failed eval is named."""

ORDER: dict[str, int] = {"failed": 0, "scored": 1, "passed": 2, "skipped": 3, "not run": 4}

Placement = Literal["in full", "named", "counted"]
"""Where a done eval goes: its section and index line, its index line alone (a failed eval past the evals in
full), or the count of evals not listed."""


@dataclass(frozen=True, kw_only=True, slots=True)
class MissLine:
    """One distinct miss of an eval over its runs, as the report lists it above the runs."""

    runs: str
    """`runs 1-3 (3×)`, `run 2`."""
    miss: Miss


@dataclass(kw_only=True, slots=True)
class EvalRow:
    """One eval as the report shows it: its line in the index and the head of its section."""

    anchor: str | None
    """The id of its section (`eval-N`, N its place in the plan); None for a failed eval only named in the index."""
    planned: PlannedEval
    status: str
    """The eval's verdict (`EvalTally.status`), or `not run` when no run finished (an interrupted suite)."""
    done: int
    passing: int
    counted: int
    pass_rate: float | None
    mean_duration_s: float
    cost: float | None
    spent: bool
    first_miss: str | None
    misses: list[MissLine] = field(default_factory=list)
    """With `--runs N`: each distinct miss once, naming the runs it hit (the runs below are folded)."""
    points: str = ""
    """A score eval's points (`2/3 points`, or their mean over the runs with its interval); "" otherwise."""

    @property
    def interval(self) -> str:
        """`95% CI 49%-94%`: the Wilson interval of the pass rate over the runs (empty without runs)."""
        return interval_text(runs_rate(self.passing, self.counted))


@dataclass(kw_only=True, slots=True)
class EvalRecord:
    """An eval whose runs are coming in: where its rendered runs are in the run spool, its first miss."""

    planned: PlannedEval
    runs: list[tuple[int, int, int]] = field(default_factory=list)
    """(run index, position, length) of each rendered run in the run spool."""
    received: int = 0
    clean: bool = True
    """Every run so far passed or was skipped: the eval cannot fail (unless more runs come)."""
    miss: tuple[int, str] | None = None
    """(run index, words) of the first thing that went wrong, from the lowest run index that had one."""
    misses: MissGroups = field(default_factory=MissGroups)
    judged_miss: bool = False
    """A run that missed without an error had a judge's verdict: its words (`judge said fail`) read the judge calls,
    which a stored run's light record lacks."""

    def take(self, result: RunResult, rendered: tuple[int, int] | None) -> None:
        """Count one run, with where its rendering is in the spool (None: not rendered, the eval is not shown)."""
        self.received += 1
        self.clean = self.clean and result.outcome in ("passed", "skipped")
        if result.outcome not in ("passed", "skipped") and result.error is None:
            self.judged_miss = self.judged_miss or bool(result.judge_spend.calls or result.judge_spend.cached)
        if rendered is not None:
            self.runs.append((result.run_index, *rendered))
            self.misses.add(result)
        if result.outcome in ("passed", "skipped") or (self.miss and self.miss[0] <= result.run_index):
            return
        first = next((a for a in result.assertions if a.state == "failed"), None)
        error = f"{result.error.type}: {result.error.message}" if result.error is not None else None
        words = miss_words(error, first)
        if words is not None:
            self.miss = (result.run_index, words)

    def ends_clean(self, result: RunResult) -> bool:
        """Whether `result`, coming in, is the last run of an eval that cannot fail: it and every run before it
        passed or was skipped, and no adaptive repeat can add one."""
        last = self.planned.first_runs is None and self.received + 1 >= self.planned.runs
        return last and self.clean and result.outcome in ("passed", "skipped")


@dataclass(kw_only=True, slots=True)
class InFull:
    """An eval the page shows in full: its row (its anchor set at the end) and its rendered runs."""

    row: EvalRow
    runs: list[tuple[int, int, int]]
    position: int = 0


class PageParts:
    """The evals of the page, chosen as they are done (see the module's docstring)."""

    def __init__(self, most_evals: int) -> None:
        self.most_evals = most_evals
        self.failed_in_full = 0
        self.others_in_full = 0
        self.named = 0
        """Failed evals named in the index without a section."""
        self.counted: Counter[str] = Counter()
        """Evals not listed, by status."""
        self.in_full: list[InFull] = []
        self.named_rows: IO[bytes] = tempfile.TemporaryFile()
        """The index lines of the failed evals only named, in the order they were done."""

    def place(self, status: str) -> Placement:
        """Where an eval with this status goes, counting it there."""
        if status == "failed":
            if self.failed_in_full < self.most_evals:
                self.failed_in_full += 1
                return "in full"
            self.named += 1
            return "named"
        if self.others_in_full < self.most_evals:
            self.others_in_full += 1
            return "in full"
        self.counted[status] += 1
        return "counted"

    def renders(self, record: EvalRecord, result: RunResult) -> bool:
        """Whether `result`, coming in, is worth rendering: its eval may still be shown in full."""
        if self.failed_in_full >= self.most_evals and self.others_in_full >= self.most_evals:
            return False
        return self.others_in_full < self.most_evals or not record.ends_clean(result)

    def in_plan_order(self, plan: Iterable[PlannedEval]) -> tuple[list[InFull], int]:
        """The evals in full by status, then by their place in the plan (walked once, looking up their ids alone;
        evals the plan did not name after it), their anchors set from that place; and the runs the plan holds."""
        waiting = {shown.row.planned.id: shown for shown in self.in_full}
        end = runs = 0
        for position, planned in enumerate(plan):
            end = position + 1
            runs += planned.runs
            if (shown := waiting.pop(planned.id, None)) is not None:
                shown.position = position
        for shown in waiting.values():
            shown.position = end
            end += 1
        for shown in self.in_full:
            shown.row.anchor = f"eval-{shown.position + 1}"
        return sorted(self.in_full, key=lambda shown: (ORDER[shown.row.status], shown.position)), runs

    def close(self) -> None:
        self.named_rows.close()


def miss_lines(misses: Sequence[Miss]) -> list[MissLine]:
    """Each distinct miss with the runs it hit, as the page lists them above an eval's runs."""
    return [MissLine(runs=runs_text(miss.runs), miss=miss) for miss in misses]


def eval_row(record: EvalRecord, tally: EvalTally, status: str, *, strict: bool) -> EvalRow:
    """The row of a done eval (its anchor is set once the page knows its place)."""
    spend = (tally.agent_spend or Spend()) + (tally.judge_spend or Spend())
    return EvalRow(
        anchor=None,
        planned=record.planned,
        status=status,
        done=tally.done,
        passing=tally.passing(strict=strict),
        counted=tally.counted,
        pass_rate=tally.pass_rate(strict=strict),
        mean_duration_s=tally.mean_duration_s,
        cost=spend.cost,
        spent=bool(spend.calls or spend.cached),
        first_miss=record.miss[1] if record.miss else None,
        misses=miss_lines(record.misses.misses()) if record.planned.runs > 1 else [],
        points=eval_points_text(tally),
    )
