"""The terminal reporter: a live progress bar, one line per eval as it completes, misses explained, a summary.

Every string that came from an eval or a model is printed as plain `Text` with control characters made
visible, so model output can neither inject rich markup nor move the terminal's cursor.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from niceeval._core.assertion import AssertionResult
from niceeval._core.failure import FAILURE_CLASSES
from niceeval._core.outcome import Outcome
from niceeval._core.results import RunResult, Spend
from niceeval._core.summary import (
    EvalTally,
    PlannedEval,
    Problem,
    ReporterTallies,
    SuiteSummary,
    latency_text,
    plan_index,
)
from niceeval._core.text import clean, clean_lines
from niceeval._core.wording import judge_calls, not_counted, plural, share, usd
from niceeval.attacks import AttackTally
from niceeval.render import (
    VariantTable,
    eval_points_text,
    eval_rate,
    folded_points_text,
    folded_power,
    folded_rate,
    interval_text,
    power_text,
)
from niceeval.report._grouping import container_lines, group_misses, runs_text
from niceeval.report._variants import variant_lines

if TYPE_CHECKING:
    from niceeval.report.progress import Clock, LiveProgress

_LABEL: dict[Outcome, tuple[str, str]] = {  # an eval line's first part, padded, and its style
    "passed": (" PASS   ", "green"),
    "scored": (" SCORED ", "yellow"),
    "failed": (" FAIL   ", "red"),
    "skipped": (" SKIP   ", "dim"),
}


def _spend_text(side: str, spent: Spend) -> str:
    unknown = f"unpriced (no price for {clean(', '.join(spent.unpriced))})"
    cost = usd(spent.cost) if spent.cost is not None else unknown
    return f"{side}: {judge_calls(spent)}, {plural(spent.tokens, 'token')}, {cost}"


def _pass_k_text(tally: EvalTally, strict: bool, gate: tuple[int, float] | None) -> str:
    """`pass@k` and `pass^k` at a few k (every k up to 5 runs; else 2, 5, 10, the gate's k and the number of runs)."""
    at, hat = tally.pass_at_k(strict=strict), tally.pass_hat_k(strict=strict)
    wanted = {2, 5, 10, len(at), gate[0] if gate else 0}
    shown = [k for k in at if len(at) <= 5 or k in wanted]
    parts = [f"pass@{k} {at[k]:.2f}" for k in shown if k > 1] + [f"pass^{k} {hat[k]:.2f}" for k in shown if k > 1]
    return "  " + " ".join(parts) if parts else ""


def _saved_text(summary: SuiteSummary) -> str | None:
    """With `--runs LOW..HIGH`: the runs made, and those saved against a fixed `--runs HIGH`."""
    if summary.runs_saved is None:
        return None
    made, saved = plural(summary.runs_done, "run"), plural(summary.runs_saved, "run")
    return f"adaptive repeats: {made} made, {saved} saved against --runs {summary.adaptive_most}"


def _suite_rate_text(summary: SuiteSummary) -> str:
    """`pass rate 82% (95% CI 74-90%; standard error 4% over 50 cases)`; empty for fewer than two cases."""
    rate = folded_rate(summary.totals)
    if rate.value is None or rate.stderr is None:
        return ""
    units = "clusters" if summary.totals.clustered else "cases"
    detects = power_text(folded_power(summary.totals))
    return (
        f"pass rate {share(rate.value)} ({interval_text(rate)}; standard error {share(rate.stderr)} over "
        f"{rate.clusters} {units})" + (f"\npower: {detects}" if detects else "")
    )


_INCONCLUSIVE_HINT = (
    "{count} inconclusive: no verdict (no API key, an unreachable judge, no price), so they did not count; "
    "add --fail-on-inconclusive to make them fail the suite."
)


class ConsoleReporter:
    """Prints to a rich `Console` (injected, so tests render to a string at a fixed width)."""

    def __init__(
        self,
        console: Console,
        *,
        strict: bool = False,
        min_pass_rate: float = 1.0,
        clock: Clock = time.monotonic,
        refresh_per_second: float | None = 4.0,
        min_pass_at_k: tuple[int, float] | None = None,
        runs_label: str | None = None,
        most_evals: int | None = None,
    ) -> None:
        """`runs_label`: what the header says of the runs (`3..20 runs` for adaptive repeats; default `N runs`).

        `most_evals`: print the first this many evals, then only failed ones, up to this many failures in all; the
        evals left out are counted in one line (None: print every eval, as `niceeval run` does).
        """
        self.console = console
        self.runs_label = runs_label
        self.most_evals = most_evals
        self._shown = 0
        self._failures_shown = 0
        self._hidden: dict[Outcome, int] = {}
        """Evals left out by `most_evals`, by status."""
        self._known_runs: dict[str, int] = {}
        self.strict = strict
        self.min_pass_rate = min_pass_rate
        self.min_pass_at_k = min_pass_at_k
        self._pending: dict[str, list[RunResult]] = {}
        self._planned = plan_index(())
        self._tallies = ReporterTallies(self._planned, _left_out)
        """The evals with a run finished and not yet printed."""
        self._progress: LiveProgress | None = None
        self._terminal = console.is_terminal  # rich works it out anew on every access (environment, isatty)
        if self._terminal:  # a live bar only on a terminal: in CI (and piped) its rich parts are not even imported
            from niceeval.report.progress import LiveProgress

            self._progress = LiveProgress(console, clock=clock, strict=strict, refresh_per_second=refresh_per_second)
        self._variants = VariantTable()
        self._attacks = AttackTally()
        self._carried: dict[tuple[str, str], int] = {}
        """An experiment's carried and accepted attempts, by (provenance, the suite run that made them)."""

    def _print(self, text: Text) -> None:
        # Without a terminal there are no styles to render: plain text is the same output at a fraction of the
        # cost (rich's layout is a quarter of a millisecond per eval line).
        if self._terminal:
            self.console.print(text)
        else:
            self._write(text.plain)

    def _print_parts(self, parts: list[tuple[str, str]]) -> None:
        """One line of (text, style) parts: without a terminal their text is joined, and no `Text` is made."""
        if self._terminal:
            self.console.print(Text.assemble(*parts))
        else:
            self._write("".join(text for text, _ in parts))

    def _write(self, plain: str) -> None:
        try:
            self.console.file.write(plain + "\n")
        except UnicodeEncodeError:  # a stdout that cannot encode our marks (PYTHONIOENCODING=ascii)
            encoding = getattr(self.console.file, "encoding", None) or "ascii"
            self.console.file.write(plain.encode(encoding, "backslashreplace").decode(encoding) + "\n")

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        """Take the plan and the problems found while loading it."""
        runs = plan[0].runs if plan else 1
        label = self.runs_label or plural(runs, "run")
        self._print(Text(f"niceeval · {plural(len(plan), 'eval')} × {label}", style="bold"))
        self._planned = plan_index(plan)
        self._tallies = ReporterTallies(self._planned, _left_out)
        if self._progress is not None:  # the bar's total is a pass over the plan: made only for a bar
            total = sum(p.runs for p in plan)
            # only the live bar grows with adaptive repeats, and only an adaptive eval's runs grow
            self._known_runs = {p.id: p.runs for p in self._planned.adaptive()}
            if total:
                self._progress.start(total)
            else:
                self._progress = None

    def run_started(self, eval_id: str, run_index: int) -> None:
        """Note that a run has started."""
        if self._progress is not None:
            self._progress.run_started(eval_id, run_index)

    def run_finished(self, result: RunResult) -> None:
        """Take one finished run."""
        tally = self._tallies.add(result)
        if tally is None:
            return
        self._variants.add(result)
        self._attacks.add(result)
        if result.provenance != "executed":
            key = (result.provenance, result.carried_from or "?")
            self._carried[key] = self._carried.get(key, 0) + 1
        runs = self._pending.setdefault(result.eval_id, [])
        runs.append(result)
        if self._progress is not None:
            if (grown := tally.eval.runs - self._known_runs.get(result.eval_id, tally.eval.runs)) > 0:
                self._known_runs[result.eval_id] = tally.eval.runs  # an adaptive repeat: the bar's total grows
                self._progress.add_to_total(grown)
            self._progress.run_finished(result)
        if tally.done >= tally.eval.runs:
            self._tallies.written(result.eval_id)
            self._print_eval(tally, self._pending.pop(result.eval_id))

    def _print_eval(self, tally: EvalTally, runs: list[RunResult]) -> None:
        status = tally.status(strict=self.strict, min_pass_rate=self.min_pass_rate, min_pass_at_k=self.min_pass_at_k)
        if not self._shows(status):
            self._hidden[status] = self._hidden.get(status, 0) + 1
            return
        self._print_parts(self._eval_line(tally, status))
        if any(run.failure is not None for run in runs):
            self._print_failures(runs)
        if status in ("failed", "scored"):
            self._print_misses(runs)
        elif status == "skipped" and runs[0].skip_reason:
            self._print(Text(f"   skipped: {clean(runs[0].skip_reason)}", style="dim"))
        self._print_inconclusive(runs)
        self._print_unstable(runs)
        for warning in dict.fromkeys(w for run in runs for w in run.warnings):
            self._print(Text(f"   warning: {clean(warning, 1000)}", style="yellow"))
        for container in container_lines(runs):
            self._print(Text(f"   sandbox: {clean(container)}", style="dim"))
        for run in runs:
            if run.sandbox_path:
                self._print(Text(f"   sandbox kept at {clean(run.sandbox_path)}", style="dim"))

    def _eval_line(self, tally: EvalTally, status: Outcome) -> list[tuple[str, str]]:
        """An eval's line, as (text, style) parts: its status, id, figures over its runs, mean duration."""
        label, style = _LABEL[status]
        line = [(label, f"bold {style}"), (clean(tally.eval.id, 200), "")]
        if tally.eval.runs > 1:
            rate = tally.pass_rate(strict=self.strict)
            shown = "n/a" if rate is None else share(rate)
            line.append((f"  {tally.passing(strict=self.strict)}/{tally.counted} runs passed ({shown})", style))
            if interval := interval_text(eval_rate(tally, strict=self.strict)):
                line.append((f", {interval}", style))
            line.append((_pass_k_text(tally, self.strict, self.min_pass_at_k), "dim"))
        if points := eval_points_text(tally):
            line.append((f"  {points}", style))
        line.append((f"  {tally.mean_duration_s:.2f}s", "dim"))
        if turns := latency_text(tally.latencies):
            line.append((f"  turns {turns}", "dim"))
        return line

    def _shows(self, status: Outcome) -> bool:
        """Whether an eval with this status is printed (see `most_evals`), counting it if it is."""
        most = self.most_evals
        failed = status == "failed"
        if most is not None and (self._shown >= most and (not failed or self._failures_shown >= most)):
            return False
        self._shown += 1
        self._failures_shown += failed
        return True

    def _print_hidden(self) -> None:
        """One line for the evals `most_evals` left out, by status."""
        hidden = sum(self._hidden.values())
        if not hidden:
            return
        shown = ("failed", "scored", "passed", "skipped")
        counts = ", ".join(f"{self._hidden[o]:,} {o}" for o in shown if o in self._hidden)
        self._print(
            Text(
                f"... {plural(hidden, 'more eval')} not shown ({counts}): the JSON, JUnit and HTML reports and "
                "`niceeval view` list every one",
                style="dim",
            )
        )

    def _print_failures(self, runs: list[RunResult]) -> None:
        """Why the failed runs failed, by class (`agent`, `infra`, `eval`): infra runs are not in the pass rate."""
        for failure in FAILURE_CLASSES:
            hit = sorted((r for r in runs if r.failure == failure), key=lambda r: r.run_index)
            if not hit:
                continue
            which = f"{runs_text([r.run_index for r in hit])}: " if len(runs) > 1 else ""
            text = Text(f"   {which}failed for {failure}", style="yellow" if failure == "infra" else "red")
            if failure == "infra":
                tries = max(r.attempts for r in hit)
                text.append(" (not counted in the pass rate" + (f"; tried {tries} times" if tries > 1 else "") + ")")
            self._print(text)

    def _print_misses(self, runs: list[RunResult]) -> None:
        # With --runs N, a miss repeated across runs is printed once, naming the runs it hit.
        for miss in group_misses(runs):
            prefix = f"   {runs_text(miss.runs)}: " if len(runs) > 1 else "   "
            if miss.error is not None:
                text = Text(prefix, style="red")
                text.append(f"error {clean(miss.error.type)}: {clean(miss.error.message)}", style="red")
                if miss.error.location:
                    text.append(f"  at {clean(miss.error.location)}", style="dim")
                self._print(text)
            elif miss.assertion is not None:
                self._print(self._miss(prefix, miss.assertion))

    def _print_inconclusive(self, runs: list[RunResult]) -> None:
        shown: set[tuple[str, str]] = set()
        for run in runs:
            for a in run.assertions:
                key = (a.name, a.reason)
                if a.state != "inconclusive" or key in shown:
                    continue
                shown.add(key)
                text = Text("   ")
                text.append(f"? {clean(a.name, 120)}", style="dim" if a.optional else "yellow")
                text.append(f" [inconclusive: {a.cause}]", style="dim" if a.optional else "yellow")
                if a.location:
                    text.append(f"  {clean(a.location)}", style="dim")
                text.append(f"\n       {clean(a.reason, 600)}", style="dim")
                self._print(text)

    def _print_unstable(self, runs: list[RunResult]) -> None:
        """Sampled judges whose samples did not settle the verdict, with the samples' mean and each verdict."""
        for run in runs:
            for a in run.assertions:
                if not a.unstable:
                    continue
                text = Text("   ")
                text.append(f"≈ {clean(a.name, 120)} [unstable, {a.state}]", style="yellow")
                if a.location:
                    text.append(f"  {clean(a.location)}", style="dim")
                text.append(f"\n       {clean(a.reason, 600)}", style="dim")
                self._print(text)

    def _miss(self, prefix: str, a: AssertionResult) -> Text:
        mark, style = ("✗", "red") if a.severity == "gate" else ("~", "yellow")
        text = Text(prefix)
        text.append(f"{mark} {clean(a.name, 120)}", style=f"bold {style}")
        if a.key:
            text.append(f" (key {clean(a.key, 60)})", style="dim")
        if a.points is not None:
            text.append(f" [{a.points:g} point(s) not earned] {a.shortfall()}", style=style)
        else:
            text.append(f" [{a.severity}] {a.shortfall()}", style=style)
        if a.location:
            text.append(f"  {clean(a.location)}", style="dim")
        indent = " " * len(prefix) + "    "
        if a.expected is not None:
            text.append(f"\n{indent}expected: {clean(a.expected)}")
        if a.actual is not None:
            text.append(f"\n{indent}actual:   {clean(a.actual)}")
        if a.reason:
            text.append(f"\n{indent}reason:   {clean_lines(a.reason, indent + '  ', 1200)}", style="dim")
        return text

    def _print_problems(self, summary: SuiteSummary) -> None:
        for problem in summary.problems:
            text = Text(" ERROR  ", style="bold red")
            # a usage error's message is printed under its eval already: here only where, for the exit code 2
            message = "the API misuse shown above" if problem.kind == "usage" else problem.message
            text.append(clean(f"{problem.location}: {message}", 2000))
            self._print(text)

    def _attack_lines(self) -> list[str]:
        rates = self._attacks.rates()
        return rates.lines() if rates is not None else []

    def _print_carried(self) -> None:
        for (provenance, source), count in self._carried.items():
            self._print(Text(f"{provenance}: {plural(count, 'attempt')} from suite run {source}, not run again", "dim"))

    def finish(self, summary: SuiteSummary) -> None:
        """Finish the report from the suite's summary."""
        if self._progress is not None:
            self._progress.stop()
        for eval_id, runs in self._pending.items():
            self._print_eval(self._tallies[eval_id], runs)
        self._pending.clear()
        self._tallies.clear()
        self._print_hidden()
        for row in [*variant_lines(self._variants, strict=self.strict), *self._attack_lines()]:
            self._print(Text(clean(row, 2000)))
        self._print_problems(summary)
        counts = summary.eval_counts()
        parts = [f"{counts[o]} {o}" for o in ("passed", "scored", "failed", "skipped")]
        line = Text(", ".join(parts), style="bold")
        size = f"{plural(summary.evals, 'eval')}, {plural(summary.runs_done, 'run')}"
        line.append(f" ({size}) in {summary.duration_s:.2f}s")
        for note in _judge_notes(summary):
            line.append(f" · {note}", style="yellow")
        if summary.problems:
            line.append(f" · {plural(len(summary.problems), 'error')}", style="red")
        if summary.interrupted:
            line.append(" · interrupted", style="red")
        self._stops(summary, line)
        line.stylize("green" if summary.exit_code == 0 else "red", 0, len(", ".join(parts)))
        self._print_carried()
        for dim in (_suite_rate_text(summary), folded_points_text(summary.totals), _saved_text(summary)):
            if dim:
                self._print(Text(dim, style="dim"))
        self._print(line)
        if summary.inconclusive and summary.exit_code == 0:
            self._print(Text(_INCONCLUSIVE_HINT.format(count=summary.inconclusive), style="yellow"))
        spend = [
            _spend_text(side, spent)
            for side, spent in (("agent", summary.agent_spend), ("judge", summary.judge_spend))
            if spent.calls or spent.cached
        ]
        if spend:
            self._print(Text(" · ".join(spend), style="dim"))

    def _stops(self, summary: SuiteSummary, line: Text) -> None:
        """Runs not counted (infra) and not started (the suite or an eval stopped) on the summary `line`.

        An eval an `EvalFatalError` stopped gets a line of its own.
        """
        if summary.infra:
            line.append(f" · {not_counted(summary.infra)}", style="yellow")
        if summary.stopped is not None:
            not_started = plural(summary.not_started, "run")
            line.append(f" · {clean(summary.stopped, 500)}: {not_started} not started", style="red")
        elif summary.halted:
            line.append(f" · {plural(summary.not_started, 'run')} not started", style="red")
        for eval_id, why in summary.halted.items():
            self._print(Text(f" HALTED {clean(eval_id, 200)}: {clean(why, 500)}", style="red"))


def _judge_notes(summary: SuiteSummary) -> list[str]:
    """The assertions no verdict counted in full: inconclusive, and sampled judges their samples did not settle."""
    counts = ((summary.inconclusive, "inconclusive"), (summary.unstable, "unstable"))
    return [f"{count} {what}" for count, what in counts if count]


def _left_out(result: RunResult) -> None:
    """A run of an eval the plan does not name: the console leaves it out."""
    del result
