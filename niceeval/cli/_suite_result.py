"""`SuiteResult`: what `niceeval.run()` returns, shown as a table in Jupyter (`_repr_html_`) and a terminal (rich).

Every cell of the HTML table is escaped: eval ids and problems come from user files, and reasons from model output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING

from niceeval._core.results import RunResult
from niceeval._core.summary import EvalTally, SuiteSummary
from niceeval._core.wording import share

if TYPE_CHECKING:
    from rich.table import Table

COLUMNS = ("eval", "status", "passed", "runs", "pass rate", "mean time", "agent cost", "judge cost")


@dataclass(frozen=True, kw_only=True)
class SuiteResult:
    """A suite run from Python: its summary, every eval run, and where it was stored.

    `print(result)` and a notebook cell show one row per eval; `result.runs_of(eval_id)` gives an eval's runs.
    """

    summary: SuiteSummary = field(repr=False)
    """The suite's totals: problems, duration, spend, the figures every report prints."""
    tallies: tuple[EvalTally, ...] = field(repr=False)
    """Every eval's tally over its runs, in plan order (the rows of the table)."""
    runs: tuple[RunResult, ...] = field(repr=False)
    """Every eval run, in plan order (then by run index), each with its assertions, events and spend."""
    run_id: str | None
    """The stored suite run's id (`niceeval show ID`, `Store(...).evals_df(ID)`); None when the store was off."""
    exit_code: int
    """What `niceeval run` would exit with: 0 passed, 1 an eval failed, 2 problems, 130 interrupted."""

    @classmethod
    def of(
        cls,
        summary: SuiteSummary,
        runs: list[RunResult],
        tallies: list[EvalTally],
        *,
        run_id: str | None,
        exit_code: int,
    ) -> SuiteResult:
        """The result of a finished suite; `tallies` in plan order, `runs` in any order (they are put in plan order)."""
        order = {tally.eval.id: position for position, tally in enumerate(tallies)}
        ordered = sorted(runs, key=lambda run: (order.get(run.eval_id, len(order)), run.run_index))
        return cls(summary=summary, tallies=tuple(tallies), runs=tuple(ordered), run_id=run_id, exit_code=exit_code)

    @property
    def passed(self) -> bool:
        """Whether the suite passed (exit code 0)."""
        return self.exit_code == 0

    def runs_of(self, eval_id: str) -> tuple[RunResult, ...]:
        """The runs of one eval (by its id, as `niceeval list` shows it)."""
        return tuple(run for run in self.runs if run.eval_id == eval_id)

    def rows(self) -> list[tuple[str, ...]]:
        """One row of text per eval, under `COLUMNS`."""
        return [self._row(tally) for tally in self.tallies if tally.done]

    def _row(self, tally: EvalTally) -> tuple[str, ...]:
        strict = self.summary.strict
        rate = tally.pass_rate(strict=strict)
        return (
            tally.eval.id,
            self.summary.status_of(tally),
            str(tally.passing(strict=strict)),
            str(tally.done),
            "-" if rate is None else share(rate),
            f"{tally.mean_duration_s:.2f}s",
            _cost(tally.agent_spend.cost if tally.agent_spend else None),
            _cost(tally.judge_spend.cost if tally.judge_spend else None),
        )

    def headline(self) -> str:
        """One line: the evals by status, the runs, the time, the exit code and where the run was stored."""
        counts = self.summary.eval_counts()
        by_status = ", ".join(f"{count} {status}" for status, count in counts.items() if count)
        evals = sum(counts.values())
        stored = f"; stored as run {self.run_id}" if self.run_id else ""
        return (
            f"{evals} eval{'s' * (evals != 1)} ({by_status or 'none run'}), {self.summary.runs_done} runs in "
            f"{self.summary.duration_s:.1f}s, exit code {self.exit_code}{stored}"
        )

    def problems(self) -> list[str]:
        """The suite's problems (files that did not load, API misuse), each as `location: message`."""
        return [f"{problem.location}: {problem.message}" for problem in self.summary.problems]

    def __rich__(self) -> Table:
        from rich.table import Table

        table = Table(*COLUMNS, title=self.headline(), caption="\n".join(self.problems()) or None)
        for row in self.rows():
            table.add_row(*row)
        return table

    def __str__(self) -> str:
        from rich.console import Console

        console = Console(width=120, color_system=None, highlight=False)
        with console.capture() as captured:
            console.print(self)
        return captured.get()

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{escape(name)}</th>" for name in COLUMNS)
        body = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in self.rows())
        problems = "".join(f"<li>{escape(problem)}</li>" for problem in self.problems())
        return (
            f"<div><p>{escape(self.headline())}</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
            + (f"<ul>{problems}</ul>" if problems else "")
            + "</div>"
        )


def _cost(cost: float | None) -> str:
    return "-" if cost is None else f"${cost:.4f}"
