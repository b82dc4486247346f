"""The markdown a GitHub Actions job shows as its step summary: totals, spend, the misses, and a baseline diff.

GitHub renders step summaries as GitHub-flavoured markdown with HTML allowed, and model output is untrusted, so
every string that came from an eval, a model or the store goes through `md`: letters, digits and spaces are kept,
line breaks become spaces, and every ASCII punctuation character that means something to markdown or HTML is
written as a numeric character reference (`<` as `&#60;`, `|` as `&#124;`, `.` as `&#46;`). So no reply can open a
tag, a link, an autolink, an image, emphasis, math or a table cell; the rendered text still reads exactly as the
model wrote it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from niceeval._core.outcome import Outcome
from niceeval._core.results import Spend
from niceeval._core.summary import Problem, SuiteSummary
from niceeval._core.wording import judge_calls, plural, share, usd
from niceeval.render import folded_points_text, folded_rate, interval_text

if TYPE_CHECKING:
    from niceeval.store import RunDiff

MAX_ROWS = 100
"""Rows per table: a step summary is capped at 1 MiB, and a long table is read by nobody."""

_HIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}  # control, format (bidi overrides), surrogates, separators
_INERT = frozenset(" ,;=+-/?%'\"{}#^")
"""ASCII punctuation with no meaning inside a paragraph or a table cell; the rest (`<`, `|`, `*`, `_`, `[`, `` ` ``,
`~`, `$` for math, `:` `.` `@` for autolinks, ...) is written as a character reference."""


def md(text: str, limit: int = 200) -> str:
    """Untrusted text as inert markdown: one line, at most `limit` characters (then `…`), no syntax left."""
    cut = text[:limit] + ("…" if len(text) > limit else "")
    out: list[str] = []
    for char in cut:
        if char.isalnum() or char in _INERT:
            out.append(char)
        elif char in "\n\r\t":
            out.append(" ")
        elif unicodedata.category(char) in _HIDDEN_CATEGORIES:
            out.append(f"&#92;u{ord(char):04x}")  # made visible, as on the console: `\u202e`
        elif ord(char) > 0x7F:
            out.append(char)
        else:
            out.append(f"&#{ord(char)};")
    return "".join(out)


@dataclass(frozen=True, kw_only=True, slots=True)
class MissRow:
    """One distinct miss of an eval that did not pass, as the summary's table shows it (raw, escaped on output)."""

    eval_id: str
    status: Outcome
    """The eval's verdict: `failed`, or `scored` (the suite passes on it)."""
    check: str
    """`✗ gate includes('x')`, `~ soft similarity`, `error ValueError`."""
    where: str
    runs: str
    """`runs 1-3 (3×)` with `--runs N`, else empty."""
    reason: str


@dataclass(frozen=True, kw_only=True, slots=True)
class StepSummary:
    """Everything the step summary says about one `niceeval run`."""

    summary: SuiteSummary
    run_id: str | None
    failed_rows: Sequence[MissRow]
    failed_total: int
    scored_rows: Sequence[MissRow]
    scored_total: int
    baseline: RunDiff | str | None = None
    """The diff against `--baseline`, or why it could not be made (None: no `--baseline`)."""


def _verdict(summary: SuiteSummary) -> str:
    if summary.interrupted:
        return "interrupted"
    return {0: "passed", 1: "failed"}.get(summary.exit_code, "errors")


def _pass_rate(counts: dict[Outcome, int]) -> str:
    counted = counts["passed"] + counts["scored"] + counts["failed"]
    if not counted:
        return "n/a"
    return share((counts["passed"] + counts["scored"]) / counted)


def _rate_lines(summary: SuiteSummary) -> list[str]:
    """The pass rate of runs over cases with its uncertainty (docs/statistics.md), nothing for one case; and the
    score evals' mean points, when the suite has any."""
    rate = folded_rate(summary.totals)
    points = folded_points_text(summary.totals)
    lines = [f"{points[0].upper()}{points[1:]}", ""] if points else []
    if rate.value is None or rate.stderr is None:
        return lines
    return [
        f"Pass rate of runs: {share(rate.value)} ({interval_text(rate)}; standard error {share(rate.stderr)} over "
        f"{rate.clusters} cases)",
        "",
        *lines,
    ]


def _cost(spent: Spend) -> str:
    if spent.cost is None:
        return "unknown (no price for " + md(", ".join(spent.unpriced), 120) + ")"
    return usd(spent.cost)


def _spend_table(summary: SuiteSummary) -> list[str]:
    rows = ["| spend | calls | tokens | cost |", "|---|---:|---:|---:|"]
    for side, spent in (("agent", summary.agent_spend), ("judge", summary.judge_spend)):
        rows.append(f"| {side} | {judge_calls(spent)} | {spent.tokens:,} | {_cost(spent)} |")
    return rows


def _miss_table(title: str, rows: Sequence[MissRow], total: int) -> list[str]:
    if not total:
        return []
    with_runs = any(row.runs for row in rows)
    head = "| eval | check | where |" + (" runs |" if with_runs else "") + " why |"
    lines = ["", f"### {title} ({total})", "", head, "|---|---|---|" + ("---|" if with_runs else "") + "---|"]
    for row in rows:
        runs = f" {md(row.runs, 60)} |" if with_runs else ""
        lines.append(f"| {md(row.eval_id)} | {md(row.check, 160)} | {md(row.where, 160)} |{runs} {md(row.reason)} |")
    if total > len(rows):
        lines += ["", f"{total - len(rows)} more not shown: the JUnit, JSON and HTML reports list every one."]
    return lines


def _problems(problems: Sequence[Problem]) -> list[str]:
    if not problems:
        return []
    lines = ["", f"### Errors ({len(problems)})", "", "| where | error |", "|---|---|"]
    lines += [f"| {md(p.location, 160)} | {md(p.message, 400)} |" for p in problems[:MAX_ROWS]]
    return lines


def _diff(diff: RunDiff | str) -> list[str]:
    if isinstance(diff, str):
        return ["", "### Compared with the baseline", "", f"Not compared: {md(diff, 400)}"]
    regressions = sum(c.regressed for c in diff.changed) + sum(m.regressed for m in diff.mean_scores)
    noise = sum(c.change == "noise" for c in diff.changed) + sum(m.change == "noise" for m in diff.mean_scores)
    lines = ["", f"### Compared with run {md(diff.base, 64)}", ""]
    lines.append(
        f"**{plural(regressions, 'regression')}** beyond noise (alpha {diff.alpha:g}) · {noise} within noise · "
        f"{len(diff.new)} new, {len(diff.gone)} gone (as by `niceeval diff`)"
    )
    if diff.suite is not None:
        lines += ["", f"Suite over {diff.suite.over}: {md(diff.suite.evidence, 300)}"]
    lines += _mean_scores(diff)
    if diff.differences:
        shown = "; ".join(f"{md(d.what, 40)}: {md(d.base, 80)} → {md(d.head, 80)}" for d in diff.differences)
        lines += ["", f"Also differed: {shown}"]
    if diff.changed:
        lines += ["", "| eval | verdict | runs passed | evidence | |", "|---|---|---|---|---|"]
        for change in diff.changed[:MAX_ROWS]:
            mark: str = "**regressed**" if change.regressed else change.change
            counts = f"{change.base_passes}/{change.base_runs} → {change.head_passes}/{change.head_runs}"
            lines.append(
                f"| {md(change.eval_id)} | {change.base} → {change.head} | {counts} | {md(change.evidence, 200)} "
                f"| {mark} |"
            )
    scores = sorted(diff.scores, key=lambda s: s.delta)
    if scores:
        lines += ["", "| eval | assertion | mean score | |", "|---|---|---|---|"]
        for score in scores[:MAX_ROWS]:
            mark = "lower" if score.delta < 0 else "higher"
            moved = f"{score.base:.2f} → {score.head:.2f} ({score.delta:+.2f})"
            lines.append(f"| {md(score.eval_id)} | {md(score.assertion, 120)} | {moved} | {mark} |")
    for label, ids in (("New", diff.new), ("Gone", diff.gone)):
        if ids:
            shown = ", ".join(md(i, 120) for i in ids[:20])
            lines += ["", f"{label}: {shown}" + (f" and {len(ids) - 20} more" if len(ids) > 20 else "")]
    return lines


def _mean_scores(diff: RunDiff) -> list[str]:
    """Each graded assertion's paired test over the shared cases, strongest evidence first."""
    if not diff.mean_scores:
        return []
    lines = ["", "| assertion | shared cases | mean score | evidence | |", "|---|---:|---|---|---|"]
    for score in diff.mean_scores[:MAX_ROWS]:
        mark: str = "**regressed**" if score.regressed else score.change
        moved = f"{score.base_mean:.2f} → {score.head_mean:.2f}"
        evidence = md(score.evidence, 200) + (f" (q={score.q_value:.3g})" if score.q_value is not None else "")
        shared = f"{score.cases} ({score.clusters} clusters)" if score.clusters != score.cases else f"{score.cases}"
        lines.append(f"| {md(score.assertion, 120)} | {shared} | {moved} | {evidence} | {mark} |")
    return lines


def render(step: StepSummary) -> str:
    """The step summary as markdown, ending with a blank line (summaries of several runs are appended)."""
    summary = step.summary
    counts = summary.eval_counts()
    named = f" run {md(step.run_id, 64)}" if step.run_id else ""
    totals = ", ".join(
        f"**{counts[o]} {o}**" if o == "failed" and counts[o] else f"{counts[o]} {o}"
        for o in ("passed", "scored", "failed", "skipped")
    )
    lines = [
        f"## niceeval{named}: {_verdict(summary)}",
        "",
        f"{totals} · {plural(summary.evals, 'eval')}, {plural(summary.runs_done, 'run')} · "
        f"pass rate {_pass_rate(counts)} · {summary.duration_s:.2f} s",
        "",
        *_rate_lines(summary),
        *_spend_table(summary),
    ]
    if summary.inconclusive:
        inconclusive = plural(summary.inconclusive, "inconclusive assertion")
        lines += ["", f"{inconclusive} (no verdict: they count as passed)."]
    lines += _problems(summary.problems)
    lines += _miss_table("Failed", step.failed_rows, step.failed_total)
    lines += _miss_table("Scored (soft misses; the suite passes on them)", step.scored_rows, step.scored_total)
    if step.baseline is not None:
        lines += _diff(step.baseline)
    return "\n".join(lines) + "\n\n"
