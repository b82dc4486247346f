r"""GitHub Actions output: annotations at the lines that missed, and a markdown step summary.

`niceeval run` adds this reporter when `GITHUB_ACTIONS=true` (or with `--github`). It

- turns workflow commands off while the suite runs (`::stop-commands::TOKEN`, a random token): the console
  prints model output, and a reply holding a line like `::error::...` or `::add-mask::...` must not become a
  command. The token is unguessable, so no output can turn commands back on; this reporter does, at the end;
- then prints one annotation per distinct miss of every eval that did not pass (misses repeated across
  `--runs N` are grouped, as on the console): `::error` for a miss that fails its eval, `::warning` for a soft
  miss (`scored`) or a miss `--min-pass-rate` tolerated, at the assertion's recorded line (else the eval's),
  the path taken relative to the repository (`GITHUB_WORKSPACE`). GitHub shows at most 10 error and 10 warning
  annotations per step, so at most that many are printed and a notice says how many were left out;
- appends the step summary (see `_step_summary.py`) to the file `GITHUB_STEP_SUMMARY` names.

Data is escaped as GitHub's toolkit does (`%` `\r` `\n`; properties also `:` `,`), after control characters
are made visible, so an annotation is always one line.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple, TextIO

from niceeval._core.outcome import Outcome
from niceeval._core.results import RunResult
from niceeval._core.summary import (
    EvalTally,
    PlannedEval,
    Problem,
    ReporterTallies,
    SuiteSummary,
    plan_index,
)
from niceeval._core.wording import plural
from niceeval.report._grouping import Miss, group_misses, runs_text
from niceeval.report._step_summary import MAX_ROWS, MissRow, StepSummary, render

if TYPE_CHECKING:
    from niceeval.store import RunDiff

Level = Literal["error", "warning", "notice"]

SHOWN_PER_LEVEL = 10
"""GitHub shows at most 10 error and 10 warning annotations per step (50 per job); the rest would be lost."""

# Made visible before escaping: control characters (LF and CR aside: escaped as GitHub decodes them), the Unicode
# line and paragraph separators, and lone surrogates.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_data(text: str) -> str:
    """A workflow command's message: one line whatever it holds (`%`, CR, LF escaped as GitHub decodes them)."""
    text = _CONTROL.sub(_visible, text)
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (`title=`, `file=`): as data, and `:` and `,` escaped too."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _bounded(text: str, limit: int) -> str:
    return text[:limit] + (f"... ({len(text) - limit} more chars)" if len(text) > limit else "")


@dataclass(frozen=True, kw_only=True, slots=True)
class Annotation:
    """One `::error` / `::warning` / `::notice` workflow command."""

    level: Level
    title: str
    message: str
    file: str | None = None
    """Relative to the repository root; None when the place is not a file in it."""
    line: int | None = None

    def command(self) -> str:
        """The annotation as a GitHub workflow command line."""
        props = [f"file={escape_property(self.file)}"] if self.file else []
        if self.file and self.line:
            props.append(f"line={self.line}")
        props.append(f"title={escape_property(self.title.replace(chr(10), ' '))}")
        return f"::{self.level} {','.join(props)}::{escape_data(self.message)}"


@dataclass(kw_only=True, slots=True)
class GitHubOptions:
    """Where the GitHub reporter writes, and the suite's gates (the same rule as every reporter's)."""

    out: TextIO = field(default_factory=lambda: sys.stdout)
    """Where workflow commands go (GitHub reads them from the step's output)."""
    summary_path: Path | None = None
    """`GITHUB_STEP_SUMMARY`: the markdown is appended here (None: no summary)."""
    workspace: Path = field(default_factory=Path.cwd)
    """The repository root (`GITHUB_WORKSPACE`): annotation paths are relative to it."""
    cwd: Path = field(default_factory=Path.cwd)
    """What the recorded paths are relative to (the directory `niceeval run` ran in)."""
    strict: bool = False
    min_pass_rate: float = 1.0
    min_pass_at_k: tuple[int, float] | None = None
    run_id: str | None = None
    baseline: Callable[[], RunDiff] | None = None
    """Called at the end (after the store has every run): the diff of `--baseline` against this run."""


class GitHubReporter:
    """Annotations and a step summary for GitHub Actions (see the module docstring)."""

    def __init__(self, options: GitHubOptions, *, token: str | None = None) -> None:
        self.options = options
        self._token = token or secrets.token_hex(16)
        self._planned = plan_index(())
        self._tallies = ReporterTallies(self._planned, _unplanned)
        """The evals with a run finished and not yet done."""
        self._pending: dict[str, list[RunResult]] = {}
        self._shown: dict[Level, list[Annotation]] = {"error": [], "warning": []}
        self._left_out = 0
        self._rows: dict[Outcome, list[MissRow]] = {"failed": [], "scored": []}
        self._row_totals: dict[Outcome, int] = {"failed": 0, "scored": 0}
        self._paths: dict[str, str | None] = {}

    def _print(self, line: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # `niceeval run | head`: stdout may be gone
            print(line, file=self.options.out, flush=True)

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        """Take the plan and the problems found while loading it."""
        self._planned = plan_index(plan)
        self._tallies = ReporterTallies(self._planned, _unplanned)
        self._print(f"::stop-commands::{self._token}")

    def run_finished(self, result: RunResult) -> None:
        """Take one finished run."""
        tally = self._tallies.add(result)
        assert tally is not None  # a run the plan does not name is counted under a record of its own
        self._pending.setdefault(result.eval_id, []).append(result)
        if tally.done >= tally.eval.runs:
            self._tallies.written(result.eval_id)
            self._eval_done(tally, self._pending.pop(result.eval_id))

    def _status(self, tally: EvalTally) -> Outcome:
        o = self.options
        return tally.status(strict=o.strict, min_pass_rate=o.min_pass_rate, min_pass_at_k=o.min_pass_at_k)

    def _eval_done(self, tally: EvalTally, runs: list[RunResult]) -> None:
        status = self._status(tally)
        if status not in ("failed", "scored"):
            return
        many = tally.eval.runs > 1
        misses = group_misses(runs)
        for miss in misses:
            self._add_miss(tally.eval.id, status, miss, runs, many=many)
        if not misses and status == "failed":  # failed on inconclusive assertions (--fail-on-inconclusive)
            why = "inconclusive assertions count as misses (--fail-on-inconclusive)"
            where = f"{runs[0].file}:{runs[0].line}"
            self._add(Annotation(level="error", title=f"niceeval {tally.eval.id}", message=f"failed: {why}"), where)
            self._add_row(
                MissRow(eval_id=tally.eval.id, status=status, check="failed", where=where, runs="", reason=why)
            )

    def _level(self, miss: Miss, status: Outcome) -> Level:
        if status != "failed":
            return "warning"
        if miss.assertion is not None and miss.assertion.severity == "soft" and not self.options.strict:
            return "warning"  # the eval failed on something else: this miss alone would leave it `scored`
        return "error"

    def _add_miss(self, eval_id: str, status: Outcome, miss: Miss, runs: list[RunResult], *, many: bool) -> None:
        hit = runs_text(miss.runs) if many else ""
        told = _describe(miss, f"{runs[0].file}:{runs[0].line}")
        message = told.message
        if status == "scored":
            soft = miss.assertion is not None and miss.assertion.severity == "soft" and not self.options.strict
            message += (
                "\nsoft miss: the eval is `scored` (fails under --strict)"
                if soft
                else f"\ntolerated: the eval met --min-pass-rate {self.options.min_pass_rate:g}"
            )
        title = f"niceeval {_bounded(eval_id, 200)}: {_bounded(told.name, 120)}"
        level = self._level(miss, status)
        self._add(Annotation(level=level, title=title, message=f"{hit}: {message}" if hit else message), told.where)
        row = MissRow(eval_id=eval_id, status=status, check=told.check, where=told.where, runs=hit, reason=told.reason)
        self._add_row(row)

    def _add(self, annotation: Annotation, where: str) -> None:
        shown = self._shown[annotation.level]
        if len(shown) >= SHOWN_PER_LEVEL:
            self._left_out += 1
            return
        file, line = self._place(where)
        shown.append(replace(annotation, file=file, line=line))

    def _add_row(self, row: MissRow) -> None:
        self._row_totals[row.status] += 1
        if len(self._rows[row.status]) < MAX_ROWS:
            self._rows[row.status].append(row)

    def _place(self, where: str) -> tuple[str | None, int | None]:
        """`path:line` as recorded (relative to where niceeval ran) -> the path in the repository, and the line."""
        path, _, line = where.rpartition(":")
        if not path or not line.isdigit():
            path, line = where, ""
        if path not in self._paths:
            self._paths[path] = self._repo_path(path)
        return self._paths[path], int(line) if line else None

    def _repo_path(self, path: str) -> str | None:
        full = Path(path) if os.path.isabs(path) else self.options.cwd / path
        try:
            if not full.is_file():
                return None  # a case written in the browser (`ui::NAME`), or a file gone since
            return full.resolve().relative_to(self.options.workspace.resolve()).as_posix()
        except (OSError, ValueError):
            return None  # outside the repository: GitHub could not show it on a file

    def finish(self, summary: SuiteSummary) -> None:
        """Finish the report from the suite's summary."""
        for eval_id, runs in self._pending.items():  # interrupted: the runs that finished, by what they show
            self._eval_done(self._tallies[eval_id], runs)
        self._pending.clear()
        self._print(f"::{self._token}::")  # workflow commands back on: only ours follow
        problems = [self._problem(p) for p in summary.problems if p.kind == "load"]  # misuse: already a run's miss
        errors = [*problems, *self._shown["error"]]
        self._left_out += max(0, len(errors) - SHOWN_PER_LEVEL)
        for annotation in [*errors[:SHOWN_PER_LEVEL], *self._shown["warning"]]:
            self._print(annotation.command())
        if self._left_out:
            note = Annotation(
                level="notice",
                title="niceeval",
                message=f"{plural(self._left_out, 'more miss', 'more misses')} not annotated "
                f"(GitHub shows {SHOWN_PER_LEVEL} errors and "
                f"{SHOWN_PER_LEVEL} warnings per step); the step summary and the reports list them.",
            )
            self._print(note.command())
        if self.options.summary_path is not None:
            self._write_summary(summary)

    def _problem(self, problem: Problem) -> Annotation:
        file, line = self._place(problem.location)
        message = _bounded(problem.message, 1000)
        return Annotation(level="error", title="niceeval load error", message=message, file=file, line=line)

    def _write_summary(self, summary: SuiteSummary) -> None:
        assert self.options.summary_path is not None
        baseline: RunDiff | str | None = None
        if self.options.baseline is not None:
            try:
                baseline = self.options.baseline()
            except Exception as exc:  # the store went away: say so in the summary, keep the rest
                baseline = f"{type(exc).__name__}: {exc}"
        step = StepSummary(
            summary=summary,
            run_id=self.options.run_id,
            failed_rows=self._rows["failed"],
            failed_total=self._row_totals["failed"],
            scored_rows=self._rows["scored"],
            scored_total=self._row_totals["scored"],
            baseline=baseline,
        )
        with self.options.summary_path.open("a", encoding="utf-8") as out:  # other steps' summaries stay
            out.write(render(step))


class _Told(NamedTuple):
    name: str
    """The assertion's name, or `error ValueError`."""
    check: str
    """For the summary's table: `✗ gate includes('x')`, `~ soft similarity`, `error ValueError`."""
    where: str
    reason: str
    """For the summary's table: one line."""
    message: str
    """For the annotation: what missed, then expected, actual and reason on lines of their own."""


def _describe(miss: Miss, eval_place: str) -> _Told:
    if miss.error is not None:
        error = miss.error
        reason = f"{error.type}: {error.message}"
        name = f"error {error.type}"
        return _Told(name, name, error.location or eval_place, reason, _bounded(reason, 1000))
    assert miss.assertion is not None
    a = miss.assertion
    reason = (
        a.shortfall()
        + (f"; actual: {a.actual}" if a.actual is not None else "")
        + (f"; {a.reason}" if a.reason else "")
    )
    details = [f"[{a.severity}] {_bounded(a.name, 200)}: {a.shortfall()}"]
    for label, value, limit in (("expected", a.expected, 300), ("actual", a.actual, 300), ("reason", a.reason, 600)):
        if value:
            details.append(f"{label}: {_bounded(value, limit)}")
    check = f"{'✗' if a.severity == 'gate' else '~'} {a.severity} {a.name}"
    return _Told(a.name, check, a.location or eval_place, reason, "\n".join(details))


def _unplanned(result: RunResult) -> PlannedEval:
    """A run of an eval the plan does not name: its misses annotated where the run says it is."""
    return PlannedEval(id=result.eval_id, file=result.file, line=result.line)
