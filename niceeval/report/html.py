r"""The HTML reporter: one self-contained page to read a suite's results in, offline, from CI artifacts or email.

The page looks like the viewer (`niceeval.render`'s stylesheet, inlined, and its templates for a run; the page
itself is `report/templates/report.html`, its own styles `report/static/report.css`) and needs nothing
else: no network, no script. A Content-Security-Policy in the page forbids scripts and every fetch, so even a
template mistake could not make model output run or call home. Every string is escaped by Jinja2; control
characters and lone surrogates become visible escapes (`\x1b`, `\ud800`), as on the console; texts over
`TEXT_LIMIT` characters are cut with a note.

Runs arrive in completion order; a run is rendered when it finishes (or, for a replayed stored run, when its eval
is done, read again in full) and spooled to a temporary file, if its eval may be shown in full. The page is
bounded (`_html_page.py`): the first `MOST_EVALS` failed evals and as many others in full, every other failed eval
named in the index, the rest counted in one line that says where to read them; the summary above is folded over
every run. At the end the page is assembled, failures first and plan order within a status, and written atomically
(`.partial` then rename), also when the suite was interrupted.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

from markupsafe import Markup

from niceeval._core.results import RunResult
from niceeval._core.summary import EvalTally, PlannedEval, Problem, SuiteSummary, plan_index
from niceeval.attacks import AttackTally
from niceeval.render import STATIC_DIR, JudgeModelUse, VariantTable, commands, environment, folded_rate, rounds
from niceeval.report._html_page import (
    MOST_EVALS,
    ORDER,
    EvalRecord,
    EvalRow,
    InFull,
    MissLine,
    PageParts,
    Placement,
    eval_row,
)

if TYPE_CHECKING:
    import jinja2

_OWN_STATIC = Path(__file__).resolve().parent / "static"

__all__ = ["MOST_EVALS", "EvalRow", "HtmlReporter", "MissLine", "StoredRuns", "visible"]

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


class StoredRuns(Protocol):
    """Where the HTML report of a replayed suite run (`niceeval report`, `export`) reads what its light runs lack.

    The runs of the evals it lists, in full, and the judge calls per model.
    """

    def runs(self, eval_ids: Sequence[str]) -> Iterable[RunResult]:
        """Every stored run of these evals, in full."""
        ...

    def judge_models(self) -> list[JudgeModelUse]:
        """The suite run's judge calls per model."""
        ...


_FETCHED = 100
"""Evals whose runs a replayed report reads in full per round trip (`StoredRuns.runs`)."""
_WAITING = 1000
"""Done evals a replayed report holds on their way to the page (their order kept while some wait for their runs)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class _Waiting:
    """A replayed run's done eval on its way to the page."""

    record: EvalRecord
    """Its record from the light runs (their first miss)."""
    tally: EvalTally
    status: str
    placement: Placement
    wanted: bool
    """Its runs are read in full: it is shown in full, or its first miss names a judge's verdict."""


class HtmlReporter:
    """Writes the suite's results to `path` as one self-contained HTML page (see docs/guide.md, "HTML report").

    Args:
        path: Where to write the page (its folder is created).
        run_id: The suite run's id in the results store, shown in the page (None: not stored).
        started_at: When the suite started (default: when `start` is called; `niceeval export` passes the stored
            time).
        stored: For a replayed suite run: where its runs are read in full (the runs it is given are then light,
            without judge calls and events, and only tallied). None: the runs given are whole, as a suite's.
        most_evals: Failed evals shown in full, and as many others; the other failed evals are named in the
            index, the rest counted in one line.
    """

    def __init__(
        self,
        path: Path,
        *,
        run_id: str | None = None,
        started_at: datetime | None = None,
        stored: StoredRuns | None = None,
        most_evals: int = MOST_EVALS,
    ) -> None:
        if most_evals < 1:
            raise ValueError(f"most_evals is {most_evals}: give 1 or more (the failed evals shown in full, and others)")
        self.path = path
        self.run_id = run_id
        self.started_at = started_at
        self._stored = stored
        self._spool: IO[bytes] | None = None
        self._plan: Sequence[PlannedEval] = ()
        self._under_way: dict[str, EvalRecord] = {}
        self._waiting: list[_Waiting] = []
        """A replayed run's done evals on their way to the page, some waiting for their runs in full."""
        self._wanted = 0
        """How many of them wait for their runs in full."""
        self._lookup = plan_index(())
        self._page = PageParts(most_evals)
        self._variants = VariantTable()
        self._judging = _Judging()
        self._attacks = AttackTally()
        self._parts: Any = None
        self._strict = False
        self._unplanned = 0
        """Runs of evals the plan did not name (shown after the planned ones)."""

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        """Take the plan and the problems found while loading it."""
        del problems  # the summary carries them, with any found while running
        self._plan = plan
        if self._stored is None:  # a replay's light runs are only tallied: no eval is looked up
            self._lookup = plan_index(plan)
        self.started_at = self.started_at or datetime.now(UTC)
        self._parts = _templates().get_template("report.html").module
        self._spool = tempfile.TemporaryFile()

    def run_finished(self, result: RunResult) -> None:
        """Take one finished run."""
        self._variants.add(result)
        self._judging.add(result)
        self._attacks.add(result)
        if self._stored is not None:  # light: its first miss alone, unless its words need judge calls it lacks
            if result.outcome not in ("passed", "skipped"):
                self._record(result, None).take(result, None)
            return
        current = self._lookup.get(result.eval_id)
        record = self._record(result, current)
        rendered = None
        if self._page.renders(record, result):
            rendered = self._spooled(self._render_run(result, record.planned.runs))
        record.take(result, rendered)

    def _record(self, result: RunResult, current: PlannedEval | None) -> EvalRecord:
        """The record of the run's eval (made for its first run; for a run the plan did not name, too)."""
        record = self._under_way.get(result.eval_id)
        if record is None:
            planned = current or PlannedEval(id=result.eval_id, file=result.file, line=result.line)
            record = self._under_way[result.eval_id] = EvalRecord(planned=planned)
        elif current is not None:
            record.planned = current  # the suite's record of an eval under way: its runs, as repeats change them
        return record

    def _spooled(self, html: str) -> tuple[int, int]:
        assert self._spool is not None
        data = visible(html).encode()
        position = self._spool.seek(0, os.SEEK_END)
        self._spool.write(data)
        return position, len(data)

    def _render_run(self, result: RunResult, planned_runs: int) -> str:
        try:
            return str(self._parts.run(result, rounds(result), commands(result), planned_runs))
        except Exception as exc:  # one odd run never costs the report: its outcome and error still show
            why = f"this run could not be shown in full: {type(exc).__name__}: {exc}"
            return str(self._parts.stand_in(result, why, planned_runs))

    def eval_finished(self, tally: EvalTally, summary: SuiteSummary) -> None:
        """Place a done eval in the page: in full, named in the index, or counted (`PageParts.place`)."""
        self._strict = summary.strict
        self._done(tally, summary.status_of(tally))

    def _done(self, tally: EvalTally, status: str) -> None:
        placement = self._page.place(status)
        record = self._under_way.pop(tally.eval.id, None) or EvalRecord(planned=tally.eval)
        record.planned = tally.eval
        if self._stored is None:
            self._show(record, tally, status, placement)
        elif placement != "counted":
            wanted = bool(tally.done) and (placement == "in full" or record.judged_miss)
            waits = _Waiting(record=record, tally=tally, status=status, placement=placement, wanted=wanted)
            self._waiting.append(waits)
            self._wanted += wanted
            if self._wanted >= _FETCHED or len(self._waiting) >= _WAITING:
                self._fetched()

    def _fetched(self) -> None:
        """Show the waiting evals of a replayed run, in the order they were done, those that need it read in full."""
        assert self._stored is not None
        waiting, self._waiting, self._wanted = self._waiting, [], 0
        runs: dict[str, list[RunResult]] = {w.tally.eval.id: [] for w in waiting if w.wanted}
        if runs:
            for result in self._stored.runs(list(runs)):
                runs[result.eval_id].append(result)
        for w in waiting:
            record = w.record
            if w.wanted:
                record = EvalRecord(planned=w.tally.eval)
                for result in sorted(runs[w.tally.eval.id], key=lambda r: r.run_index):
                    in_full = w.placement == "in full"
                    record.take(result, self._spooled(self._render_run(result, w.tally.eval.runs)) if in_full else None)
            self._show(record, w.tally, w.status, w.placement)

    def _show(self, record: EvalRecord, tally: EvalTally, status: str, placement: Placement) -> None:
        if placement == "counted":
            return
        row = eval_row(record, tally, status, strict=self._strict)
        if placement == "named":
            self._page.named_rows.write(visible(str(self._parts.index_row(row))).encode())
        else:
            self._page.in_full.append(InFull(row=row, runs=record.runs))

    def finish(self, summary: SuiteSummary) -> None:
        """Finish the report from the suite's summary."""
        assert self._spool is not None
        self._strict = summary.strict
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        try:
            self._place_the_rest(summary)
            with partial.open("wb") as out:
                self._write(out, summary)
            os.replace(partial, self.path)
        finally:
            partial.unlink(missing_ok=True)
            self._spool.close()
            self._page.close()

    def _place_the_rest(self, summary: SuiteSummary) -> None:
        """Place the evals no one said were done, in plan order, then the runs the plan did not name.

        (An interrupted suite's, or those of a reporter driven without `eval_finished`.)
        """
        for tally in summary.unfinished:
            self._done(tally, summary.status_of(tally) if tally.done else "not run")
        for record in list(self._under_way.values()):  # tallied from what the report was given: nothing
            self._unplanned += record.planned.runs
            self._done(EvalTally(eval=record.planned), "not run")
        if self._stored is not None:
            self._fetched()

    def _write(self, out: IO[bytes], summary: SuiteSummary) -> None:
        in_full, runs_planned = self._page.in_plan_order(self._plan)
        css, style_hash, icon = _page_assets()
        page = {
            "run_id": self.run_id,
            "started_at": self.started_at,
            "generated_at": datetime.now(UTC),
            "summary": summary,
            "counts": summary.eval_counts(),
            # over runs, as the console and the JSON report say it (the eval counts are the cards beside it)
            "pass_rate": folded_rate(summary.totals).value,
            "run_rate": folded_rate(summary.totals),
            "verdict": _VERDICTS.get(summary.exit_code, "failed"),
            "evals": len(in_full) + self._page.named + self._page.counted.total(),
            "named": self._page.named,
            "counted": [(status, self._page.counted[status]) for status in ORDER if self._page.counted[status]],
            "most_evals": self._page.most_evals,
            "runs_planned": runs_planned + self._unplanned,
            "variants": self._variants.for_page(strict=summary.strict),
            "attacks": self._attacks.rates(),
            "judges": self._judge_models(),
            "inconclusive": sorted(self._judging.inconclusive.items(), key=lambda item: -item[1]),
            "css": css,
            "style_hash": style_hash,
            "icon": icon,
        }
        out.write(visible(str(self._parts.head(page))).encode())
        for shown in in_full:
            out.write(visible(str(self._parts.index_row(shown.row))).encode())
        out.write(visible(str(self._parts.index_end(page))).encode())
        self._copy(self._page.named_rows, out, 0, self._page.named_rows.seek(0, os.SEEK_END))
        out.write(visible(str(self._parts.named_end(page))).encode())
        for shown in in_full:
            out.write(visible(str(self._parts.eval_open(shown.row))).encode())
            for _, position, length in sorted(shown.runs):
                self._copy(self._spool, out, position, length)
            out.write(str(self._parts.eval_close()).encode())
        out.write(str(self._parts.foot(page)).encode())

    def _judge_models(self) -> list[JudgeModelUse]:
        models = self._stored.judge_models() if self._stored is not None else list(self._judging.models.values())
        return sorted(models, key=lambda use: -(use.calls + use.cached + use.unsent))

    @staticmethod
    def _copy(source: IO[bytes] | None, out: IO[bytes], position: int, length: int) -> None:
        assert source is not None
        source.seek(position)
        while length > 0:
            chunk = source.read(min(length, _COPY_CHUNK))
            if not chunk:
                break
            out.write(chunk)
            length -= len(chunk)
