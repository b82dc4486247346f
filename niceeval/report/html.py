r"""The HTML reporter: one self-contained page to read a suite's results in, offline, from CI artifacts or email.

The page looks like the viewer (`niceeval.render`'s stylesheet, inlined, and its templates for a run; the page
itself is `report/templates/report.html`, its own styles `report/static/report.css`) and needs nothing
else: no network, no script. A Content-Security-Policy in the page forbids scripts and every fetch, so even a
template mistake could not make model output run or call home. Every string is escaped by Jinja2; control
characters and lone surrogates become visible escapes (`\x1b`, `\ud800`), as on the console; texts over
`TEXT_LIMIT` characters are cut with a note.

Runs arrive in completion order; each is rendered when it finishes and spooled to a temporary file, so memory stays
flat. At the end the page is assembled: the summary, then every eval, failures first, its runs in order, written
atomically (`.partial` then rename), also when the suite was interrupted.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import quote

from markupsafe import Markup

from niceeval._core.results import RunResult, Spend
from niceeval._core.summary import EvalTally, PlannedEval, Problem, SuiteSummary, plan_index
from niceeval._core.wording import miss_words
from niceeval.attacks import AttackTally
from niceeval.render import (
    STATIC_DIR,
    JudgeModelUse,
    VariantTable,
    commands,
    environment,
    eval_points_text,
    folded_rate,
    interval_text,
    rounds,
    runs_rate,
)
from niceeval.report._grouping import Miss, MissGroups, runs_text

if TYPE_CHECKING:
    import jinja2

_OWN_STATIC = Path(__file__).resolve().parent / "static"

_ORDER: dict[str, int] = {"failed": 0, "scored": 1, "passed": 2, "skipped": 3, "not run": 4}
_VERDICTS = {0: "passed", 1: "failed", 2: "errors", 130: "interrupted", 143: "interrupted"}
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_COPY_CHUNK = 1 << 16


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(html: str) -> str:
    """`html` with control characters (tab and line ends aside) and lone surrogates as visible escapes.

    Applied to rendered markup, which holds none of them itself: only text from evals and models can.
    """
    return _CONTROL.sub(_escape, html)


@functools.cache
def _templates() -> jinja2.Environment:
    """The report's template environment, built once: its page over the parts it shares with the viewer."""
    return environment("niceeval.report")


@functools.cache
def _page_assets() -> tuple[Markup, str, str]:
    """The inlined stylesheet, its CSP hash, and the favicon as a data URL."""
    css = (STATIC_DIR / "viewer.css").read_text(encoding="utf-8") + (_OWN_STATIC / "report.css").read_text(
        encoding="utf-8"
    )
    digest = base64.b64encode(hashlib.sha256(css.encode()).digest()).decode()
    icon = "data:image/svg+xml," + quote((STATIC_DIR / "favicon.svg").read_text(encoding="utf-8").strip())
    return Markup(css), f"sha256-{digest}", icon


@dataclass(kw_only=True, slots=True)
class EvalRow:
    """One eval as the report shows it: its line in the index and the head of its section."""

    anchor: str
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


@dataclass(frozen=True, kw_only=True, slots=True)
class MissLine:
    """One distinct miss of an eval over its runs, as the report lists it above the runs."""

    runs: str
    """`runs 1-3 (3×)`, `run 2`."""
    miss: Miss


class _Judging:
    """Judge calls per model and inconclusive assertions per cause, counted as runs finish (small and bounded)."""

    def __init__(self) -> None:
        self.models: dict[str, JudgeModelUse] = {}
        self.inconclusive: dict[str, int] = {}

    def add(self, result: RunResult) -> None:
        for assertion in result.assertions:
            if assertion.state == "inconclusive":
                cause = assertion.cause or "unknown"
                self.inconclusive[cause] = self.inconclusive.get(cause, 0) + 1
            for call in assertion.judge_calls:
                use = self.models.get(call.model)
                if use is None:
                    use = self.models[call.model] = JudgeModelUse(model=call.model)
                use.add(call)


@dataclass(kw_only=True, slots=True)
class _EvalRecord:
    """What the reporter keeps per eval while the suite runs: where its runs are in the spool, its first miss."""

    planned: PlannedEval
    position: int
    runs: list[tuple[int, int, int]] = field(default_factory=list)
    """(run index, position, length) of each rendered run in the spool."""
    miss: tuple[int, str] | None = None
    """(run index, words) of the first thing that went wrong, from the lowest run index that had one."""
    misses: MissGroups = field(default_factory=MissGroups)
    tally: EvalTally | None = None
    """The eval's tally once its last run was reported (the suite keeps none: its summary is folded)."""

    def note_miss(self, result: RunResult) -> None:
        if result.outcome in ("passed", "skipped") or (self.miss and self.miss[0] <= result.run_index):
            return
        first = next((a for a in result.assertions if a.state == "failed"), None)
        error = f"{result.error.type}: {result.error.message}" if result.error is not None else None
        words = miss_words(error, first)
        if words is not None:
            self.miss = (result.run_index, words)


class HtmlReporter:
    """Writes the suite's results to `path` as one self-contained HTML page (see docs/guide.md, "HTML report").

    Args:
        path: Where to write the page (its folder is created).
        run_id: The suite run's id in the results store, shown in the page (None: not stored).
        started_at: When the suite started (default: when `start` is called; `niceeval export` passes the stored
            time).
    """

    def __init__(self, path: Path, *, run_id: str | None = None, started_at: datetime | None = None) -> None:
        self.path = path
        self.run_id = run_id
        self.started_at = started_at
        self._spool: IO[bytes] | None = None
        self._evals: dict[str, _EvalRecord] = {}
        self._lookup = plan_index(())
        self._variants = VariantTable()
        self._judging = _Judging()
        self._attacks = AttackTally()
        self._parts: Any = None

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        """Take the plan and the problems found while loading it."""
        del problems  # the summary carries them, with any found while running
        self._evals = {p.id: _EvalRecord(planned=p, position=i) for i, p in enumerate(plan)}
        self._lookup = plan_index(plan)
        self.started_at = self.started_at or datetime.now(UTC)
        self._parts = _templates().get_template("report.html").module
        self._spool = tempfile.TemporaryFile()

    def run_finished(self, result: RunResult) -> None:
        """Take one finished run."""
        assert self._spool is not None
        record = self._evals.get(result.eval_id)
        if record is not None and (current := self._lookup.get(result.eval_id)) is not None:
            record.planned = current  # the suite's record of an eval under way: its runs, as repeats change them
        if record is None:  # a run the plan did not name: shown after the planned evals
            planned = PlannedEval(id=result.eval_id, file=result.file, line=result.line)
            record = self._evals[result.eval_id] = _EvalRecord(planned=planned, position=len(self._evals))
        self._variants.add(result)
        self._judging.add(result)
        self._attacks.add(result)
        data = visible(self._render_run(result, record.planned.runs)).encode()
        position = self._spool.seek(0, os.SEEK_END)
        self._spool.write(data)
        record.runs.append((result.run_index, position, len(data)))
        record.note_miss(result)
        record.misses.add(result)

    def eval_finished(self, tally: EvalTally, summary: SuiteSummary) -> None:
        """Keep a done eval's tally for its row (the page lists every eval: it holds a record per eval anyway)."""
        del summary  # its gates are read when the rows are written
        record = self._evals.get(tally.eval.id)
        if record is not None:
            record.tally = tally

    def _render_run(self, result: RunResult, planned_runs: int) -> str:
        try:
            return str(self._parts.run(result, rounds(result), commands(result), planned_runs))
        except Exception as exc:  # one odd run never costs the report: its outcome and error still show
            why = f"this run could not be shown in full: {type(exc).__name__}: {exc}"
            return str(self._parts.stand_in(result, why, planned_runs))

    def finish(self, summary: SuiteSummary) -> None:
        """Finish the report from the suite's summary."""
        assert self._spool is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        try:
            with partial.open("wb") as out:
                self._write(out, summary)
            os.replace(partial, self.path)
        finally:
            partial.unlink(missing_ok=True)
            self._spool.close()

    def _write(self, out: IO[bytes], summary: SuiteSummary) -> None:
        rows = self._rows(summary)
        css, style_hash, icon = _page_assets()
        counts = summary.eval_counts()
        page = {
            "run_id": self.run_id,
            "started_at": self.started_at,
            "generated_at": datetime.now(UTC),
            "summary": summary,
            "counts": counts,
            # over runs, as the console and the JSON report say it (the eval counts are the cards beside it)
            "pass_rate": folded_rate(summary.totals).value,
            "run_rate": folded_rate(summary.totals),
            "verdict": _VERDICTS.get(summary.exit_code, "failed"),
            "rows": rows,
            "runs_planned": sum(record.planned.runs for record in self._evals.values()),
            "variants": self._variants.for_page(strict=summary.strict),
            "attacks": self._attacks.rates(),
            "judges": sorted(self._judging.models.values(), key=lambda use: -(use.calls + use.cached + use.unsent)),
            "inconclusive": sorted(self._judging.inconclusive.items(), key=lambda item: -item[1]),
            "css": css,
            "style_hash": style_hash,
            "icon": icon,
        }
        out.write(visible(str(self._parts.head(page))).encode())
        for row in rows:
            out.write(visible(str(self._parts.eval_open(row))).encode())
            for _, position, length in sorted(self._evals[row.planned.id].runs):
                self._copy(out, position, length)
            out.write(str(self._parts.eval_close()).encode())
        out.write(str(self._parts.foot(page)).encode())

    def _copy(self, out: IO[bytes], position: int, length: int) -> None:
        assert self._spool is not None
        self._spool.seek(position)
        while length > 0:
            chunk = self._spool.read(min(length, _COPY_CHUNK))
            if not chunk:
                break
            out.write(chunk)
            length -= len(chunk)

    def _rows(self, summary: SuiteSummary) -> list[EvalRow]:
        unfinished = {t.eval.id: t for t in summary.unfinished}
        rows = [
            _row(record, record.tally or unfinished.get(record.planned.id), summary)
            for record in sorted(self._evals.values(), key=lambda r: r.position)
        ]
        return sorted(rows, key=lambda row: _ORDER[row.status])  # stable: plan order within a status


def _row(record: _EvalRecord, tally: EvalTally | None, summary: SuiteSummary) -> EvalRow:
    if tally is None:  # a run the plan did not name: tallied from what the report was given
        tally = EvalTally(eval=record.planned)
    done = tally.done
    spend = (tally.agent_spend or Spend()) + (tally.judge_spend or Spend())
    return EvalRow(
        anchor=f"eval-{record.position + 1}",
        planned=record.planned,
        status=summary.status_of(tally) if done else "not run",
        done=done,
        passing=tally.passing(strict=summary.strict),
        counted=tally.counted,
        pass_rate=tally.pass_rate(strict=summary.strict),
        mean_duration_s=tally.mean_duration_s,
        cost=spend.cost,
        spent=bool(spend.calls or spend.cached),
        first_miss=record.miss[1] if record.miss else None,
        misses=_miss_lines(record) if record.planned.runs > 1 else [],
        points=eval_points_text(tally),
    )


def _miss_lines(record: _EvalRecord) -> list[MissLine]:
    return [MissLine(runs=runs_text(miss.runs), miss=miss) for miss in record.misses.misses()]
