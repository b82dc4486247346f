"""`niceeval run --dry-run`: the plan, counted, with nothing called (no agent, no judge, no sandbox).

Judge calls are counted from the eval's code (each `....judge....(...)` call written in the function, once per
run; a call in a loop counts once, a `vote` as one), so the figure is what the code asks for, not a promise. Their
cost is estimated as a ceiling: every prompt as long as the judge's cap (`max_chars`) allows, at the judge model's
price.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from niceeval._core.wording import plural
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, judge_settings


def judge_calls_written(fn: object) -> int | None:
    """How many judge calls the function's code makes (`t.judge.rubric(...)`, `turn.judge.autoevals....(...)`);
    None when its source cannot be read."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))  # type: ignore[arg-type]
    except (OSError, TypeError, SyntaxError):
        return None
    return sum(1 for node in ast.walk(tree) if isinstance(node, ast.Call) and _through_judge(node.func))


def _through_judge(func: ast.expr) -> bool:
    node = func.value if isinstance(func, ast.Attribute) else None  # the method's owner: `t.judge`, `....autoevals`
    while isinstance(node, ast.Attribute):
        if node.attr == "judge":
            return True
        node = node.value
    return False


def _cached_verdicts(root: Path) -> int | None:
    from niceeval.judge._runtime import JudgeCache, default_cache_path

    path = default_cache_path(root)
    if not path.exists():
        return None
    with JudgeCache(path) as cache:
        return len(cache)


@dataclass(kw_only=True)
class _JudgeCost:
    """The judge calls of a plan, priced: the ceiling of their cost, and what could not be priced."""

    cost: float = 0.0
    calls: dict[str, int] = field(default_factory=dict)
    """Calls by judge model."""
    max_chars: set[int] = field(default_factory=set)
    unpriced: list[str] = field(default_factory=list)
    no_model: bool = False

    def add(self, entry: EvalEntry, calls: int, options: ExecOptions) -> None:
        from niceeval.judge._runtime import estimated_cost

        settings = judge_settings(entry.spec, options)
        calls *= settings.samples
        if not calls:
            return
        if settings.model is None:
            self.no_model = True
            return
        self.calls[settings.model] = self.calls.get(settings.model, 0) + calls
        self.max_chars.add(settings.max_chars)
        cost = estimated_cost(settings.model, calls, max_chars=settings.max_chars, pricing=options.pricing)
        if cost is None:
            self.unpriced.append(settings.model)
        else:
            self.cost += cost

    def line(self) -> str | None:
        if not self.calls and not self.no_model:
            return None
        if not self.calls:
            return "judge cost: unknown, no judge model set (define_config(judge={'model': ...}) or --grader)."
        calls = ", ".join(f"{count} calls to {model}" for model, count in self.calls.items())
        caps = " or ".join(f"{cap:,}" for cap in sorted(self.max_chars))
        line = f"judge cost: at most ~${self.cost:,.4f} ({calls}; prompts capped at {caps} characters)"
        if self.unpriced:
            models = ", ".join(dict.fromkeys(self.unpriced))
            line += f"; no price for {models} (define_config(pricing={{...}}))"
        if self.no_model:
            line += "; some evals set no judge model"
        return line + "."


def plan_lines(entries: Sequence[EvalEntry], runs: int, options: ExecOptions) -> list[str]:
    """What `--dry-run` prints: per eval function its cases, variants, runs and judge calls; then the judges'
    estimated cost and the totals."""
    by_function: dict[str, list[EvalEntry]] = {}
    for entry in entries:
        by_function.setdefault(f"{entry.file}::{entry.spec.name}", []).append(entry)
    lines, total_judge, unknown, cost = [], 0, False, _JudgeCost()
    for name, group in by_function.items():
        cases = len({e.case.id for e in group if e.case is not None}) or 1
        variants = len({e.variant.name for e in group if e.variant is not None}) or 1
        written = judge_calls_written(group[0].spec.fn)
        judged = None if written is None else written * len(group) * runs
        unknown = unknown or judged is None
        total_judge += judged or 0
        cost.add(group[0], judged or 0, options)
        judges = "judge calls unknown (no source)" if judged is None else f"{judged} judge calls"
        shape = f"{plural(cases, 'case')} x {plural(variants, 'variant')} x {plural(runs, 'run')}"
        lines.append(f"{name}: {shape} = {plural(len(group) * runs, 'run')}, {judges}")
    if (priced := cost.line()) is not None:
        lines.append(priced)
    cached = _cached_verdicts(options.root)
    lines.append(
        f"plan: {len(by_function)} evals, {len(entries)} eval x case x variant, {len(entries) * runs} runs, "
        f"{total_judge}{'+' if unknown else ''} judge calls expected; "
        + ("no judge cache yet" if cached is None else f"{cached} cached judge verdicts available")
        + ". Nothing was called (--dry-run)."
    )
    return lines
