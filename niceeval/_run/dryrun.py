"""`niceeval run --dry-run`: the plan, counted, with nothing called (no agent, no judge, no sandbox).

Judge calls are counted from the eval's code (each `....judge....(...)` call written in the function, once per
run; a call in a loop counts once, a `vote` as one), so the figure is what the code asks for, not a promise.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Sequence
from pathlib import Path

from niceeval._run.discovery import EvalEntry


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
    from niceeval.judge._cache import JudgeCache, default_cache_path

    path = default_cache_path(root)
    if not path.exists():
        return None
    with JudgeCache(path) as cache:
        return len(cache)


def plan_lines(entries: Sequence[EvalEntry], runs: int, root: Path) -> list[str]:
    """What `--dry-run` prints: per eval function its cases, variants, runs and judge calls; then the totals."""
    by_function: dict[str, list[EvalEntry]] = {}
    for entry in entries:
        by_function.setdefault(f"{entry.file}::{entry.spec.name}", []).append(entry)
    lines, total_judge, unknown = [], 0, False
    for name, group in by_function.items():
        cases = len({e.case.id for e in group if e.case is not None}) or 1
        variants = len({e.variant.name for e in group if e.variant is not None}) or 1
        written = judge_calls_written(group[0].spec.fn)
        judged = None if written is None else written * len(group) * runs
        unknown = unknown or judged is None
        total_judge += judged or 0
        judges = "judge calls unknown (no source)" if judged is None else f"{judged} judge calls"
        lines.append(f"{name}: {cases} cases x {variants} variants x {runs} runs = {len(group) * runs} runs, {judges}")
    cached = _cached_verdicts(root)
    lines.append(
        f"plan: {len(by_function)} evals, {len(entries)} eval x case x variant, {len(entries) * runs} runs, "
        f"{total_judge}{'+' if unknown else ''} judge calls expected; "
        + ("no judge cache yet" if cached is None else f"{cached} cached judge verdicts available")
        + ". Nothing was called (--dry-run)."
    )
    return lines
