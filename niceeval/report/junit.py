"""The JUnit XML reporter, for CI systems: one testcase per run.

A run that did not pass (`failed`, or `scored` under --strict) is a <failure> when its eval failed (the eval's
status, the rule every reporter and the exit code share: see `EvalTally.status`); when the eval still met
`--min-pass-rate`, the run is written with a <system-out> saying it was tolerated, so the XML never shows a
failure the exit code ignores. `skipped` -> <skipped>; load problems -> a testcase with <error>. An eval's runs
are held until its last run finishes (then its status is known), and testcases are spooled; the file is written
at the end. Each testcase is written as text (`_xml`: ElementTree's bytes, without building its tree).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from niceeval._core.outcome import is_success
from niceeval._core.results import RunResult
from niceeval._core.summary import (
    EvalTally,
    PlannedEval,
    Problem,
    ReporterTallies,
    SuiteSummary,
    plan_index,
)
from niceeval.render import eval_rate, folded_points, folded_rate, points_text
from niceeval.report._xml import attribute, element, text
from niceeval.stats import Estimate


def _points(result: RunResult) -> str:
    return points_text(result.points or 0.0, result.points_possible or 0.0)


def _describe_misses(result: RunResult) -> str:
    lines = []
    if result.error is not None:
        where = f" at {result.error.location}" if result.error.location else ""
        lines.append(f"error {result.error.type}: {result.error.message}{where}\n{result.error.traceback}")
    for a in result.assertions:
        if a.state == "failed":
            lines.append(f"[{a.severity}] {a.name}: {a.shortfall()} at {a.location}")
            for label, value in (("expected", a.expected), ("actual", a.actual), ("reason", a.reason)):
                if value:
                    lines.append(f"    {label}: {value}")
    return "\n".join(lines)


def _properties(result: RunResult, rate: Estimate | None) -> str:
    """`<properties>` of one run.

    The eval's pass rate with its 95% interval (with --runs N), a failed run's class (`failure_class`: agent,
    infra, eval) and `attempts` when retried, the run's model calls, tokens (input, output, cache-read) and cost,
    agent and judge apart.
    """
    rows = []
    if result.points is not None and result.points_possible is not None:
        rows += [("points", f"{result.points:g}"), ("points_possible", f"{result.points_possible:g}")]
    if rate is not None and rate.value is not None and rate.low is not None and rate.high is not None:
        rows += [
            ("eval.pass_rate", f"{rate.value:.6f}"),
            ("eval.pass_rate_low", f"{rate.low:.6f}"),
            ("eval.pass_rate_high", f"{rate.high:.6f}"),
        ]
    if result.failure is not None:
        rows.append(("failure_class", result.failure))
    if result.attempts > 1:
        rows.append(("attempts", str(result.attempts)))
    for side, spent in (("agent", result.agent_spend), ("judge", result.judge_spend)):
        if not (spent.calls or spent.cached):
            continue
        rows += [
            (f"{side}.calls", str(spent.calls)),
            (f"{side}.input_tokens", str(spent.input_tokens)),
            (f"{side}.output_tokens", str(spent.output_tokens)),
            (f"{side}.cache_read_tokens", str(spent.cache_read_tokens)),
            (f"{side}.cost_usd", "unknown" if spent.cost is None else f"{spent.cost:.6f}"),
        ]
        if side == "judge":
            rows.append(("judge.cached", str(spent.cached)))
    if not rows:
        return ""
    return "<properties>" + "".join(_property(name, value) for name, value in rows) + "</properties>"


def _suite_properties(summary: SuiteSummary) -> str:
    """The suite's `<properties>`.

    The suite's pass rate over its cases, with its clustered standard error and 95% interval; the eval runs a
    stored suite run is missing.
    """
    rate = folded_rate(summary.totals)
    if rate.value is None and not summary.missing_runs and not summary.totals.points.items:
        return ""
    rows: list[tuple[str, float | int | None]] = [("pass_rate", rate.value), ("pass_rate_stderr", rate.stderr)]
    rows += [("pass_rate_low", rate.low), ("pass_rate_high", rate.high), ("pass_rate_clusters", rate.clusters)]
    rows += [("missing_runs", summary.missing_runs or None)]
    points = folded_points(summary.totals)
    rows += [("mean_points", points.value), ("mean_points_low", points.low), ("mean_points_high", points.high)]
    shown = [
        _property(name, f"{value:.6f}" if isinstance(value, float) else str(value))
        for name, value in rows
        if value is not None
    ]
    return element("properties", (), "".join(shown))


def _property(name: str, value: str) -> str:
    """A `<property>` (`name`: one of niceeval's, written as it is)."""
    return f'<property name="{name}" value="{attribute(value)}" />'


def _output(content: str) -> str:
    return element("system-out", (), text(content))


class JUnitReporter:
    """Writes JUnit XML to `path`."""

    def __init__(self, path: Path, *, strict: bool = False, min_pass_rate: float = 1.0) -> None:
        self.path = path
        self.strict = strict
        self.min_pass_rate = min_pass_rate
        self._spool: IO[str] | None = None
        self._counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        self._planned = plan_index(())
        self._tallies = ReporterTallies(self._planned, _unplanned)
        """The evals with a run finished and not yet written."""
        self._pending: dict[str, list[RunResult]] = {}

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        """Take the plan and the problems found while loading it."""
        self._spool = tempfile.TemporaryFile("w+", encoding="utf-8")
        self._planned = plan_index(plan)
        self._tallies = ReporterTallies(self._planned, _unplanned)

    def run_finished(self, result: RunResult) -> None:
        """Take one finished run."""
        tally = self._tallies.add(result)
        assert tally is not None  # a run the plan does not name is written under a record of its own
        self._pending.setdefault(result.eval_id, []).append(result)
        if tally.done >= tally.eval.runs:
            self._tallies.written(result.eval_id)
            self._write_eval(tally, self._pending.pop(result.eval_id))

    def _write_eval(self, tally: EvalTally, runs: list[RunResult]) -> None:
        failed = tally.status(strict=self.strict, min_pass_rate=self.min_pass_rate) == "failed"
        for result in sorted(runs, key=lambda r: r.run_index):
            self._write_case(result, eval_failed=failed, tally=tally)

    def _write_case(self, result: RunResult, *, eval_failed: bool, tally: EvalTally) -> None:
        assert self._spool is not None
        name = result.eval_id.split("::", 1)[-1]
        if tally.eval.runs > 1:  # per eval: define_eval(runs=N) and adaptive repeats give evals their own counts
            name += f"[run {result.run_index + 1}]"
        attributes = (
            ("name", name),
            ("classname", result.file.removesuffix(".py").replace("/", ".")),
            ("file", result.file),
            ("line", str(result.line)),
            ("time", f"{result.duration_s:.6f}"),
        )
        inner = _properties(result, eval_rate(tally, strict=self.strict) if tally.eval.runs > 1 else None)
        self._counts["tests"] += 1
        missed = not is_success(result.outcome, strict=self.strict)
        if missed and eval_failed:
            self._counts["failures"] += 1
            first = next((a for a in result.assertions if a.state == "failed"), None)
            message = (
                f"{result.error.type}: {result.error.message}"
                if result.error
                else f"{_points(result)} earned"
                if result.points is not None
                else f"{first.name} missed"
                if first
                else result.outcome
            )
            failure = (("message", message[:500]), ("type", result.outcome))
            inner += element("failure", failure, text(_describe_misses(result)))
        elif result.outcome == "skipped":
            self._counts["skipped"] += 1
            inner += element("skipped", (("message", result.skip_reason or ""),))
        elif missed and result.failure == "infra":
            inner += _output("failed for infra, not counted in the pass rate:\n" + _describe_misses(result))
        elif missed:
            rate = f"{tally.passing(strict=self.strict)}/{tally.counted} runs passed"
            inner += _output(
                f"{result.outcome}, tolerated: the eval met --min-pass-rate {self.min_pass_rate:g} ({rate}):\n"
                + _describe_misses(result)
            )
        elif result.outcome == "scored":
            inner += _output("scored (soft misses):\n" + _describe_misses(result))
        elif result.points is not None:
            inner += _output(f"{_points(result)} earned\n" + _describe_misses(result))
        if result.warnings:
            inner += element("system-err", (), text("\n".join(f"warning: {w}" for w in result.warnings)))
        self._spool.write(element("testcase", attributes, inner))

    def finish(self, summary: SuiteSummary) -> None:
        """Finish the report from the suite's summary."""
        assert self._spool is not None
        for eval_id, runs in self._pending.items():  # interrupted: the runs that finished, by what they show
            self._write_eval(self._tallies[eval_id], runs)
        self._pending.clear()
        self._tallies.clear()
        for problem in summary.problems:
            if problem.kind != "load":
                continue  # API misuse inside an eval is already that run's <failure>
            error = element("error", (("message", problem.message[:500]),), text(problem.message))
            self._spool.write(element("testcase", (("name", problem.location), ("classname", "niceeval.load")), error))
            self._counts["tests"] += 1
            self._counts["errors"] += 1
        attrs = " ".join(f'{k}="{v}"' for k, v in self._counts.items())
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        try:
            with partial.open("w", encoding="utf-8") as out:
                out.write('<?xml version="1.0" encoding="utf-8"?>\n')
                out.write(f'<testsuites {attrs} time="{summary.duration_s:.6f}">\n')
                out.write(f'<testsuite name="niceeval" {attrs} time="{summary.duration_s:.6f}">')
                out.write(_suite_properties(summary))
                self._spool.seek(0)
                while chunk := self._spool.read(1 << 16):
                    out.write(chunk)
                out.write("</testsuite>\n</testsuites>\n")
            os.replace(partial, self.path)
        finally:
            partial.unlink(missing_ok=True)
            self._spool.close()


def _unplanned(result: RunResult) -> PlannedEval:
    """A run of an eval the plan does not name: a test case of its own, under a record with no place."""
    return PlannedEval(id=result.eval_id, file="", line=0)
