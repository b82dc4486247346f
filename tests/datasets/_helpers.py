"""Run a small project in-process: discovery, planning and the suite, with a reporter that keeps every run."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from niceeval._core.results import RunResult
from niceeval._core.summary import EvalTally, PlannedEval, Problem, SuiteSummary
from niceeval._eval.config import load_config
from niceeval._run.discovery import discover
from niceeval._run.execute import ExecOptions
from niceeval._run.plan import expand
from niceeval._run.suite import SuiteOptions, run_suite, select


@dataclass
class Kept:
    """A reporter that keeps everything it is told."""

    plan: list[PlannedEval] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    results: list[RunResult] = field(default_factory=list)
    summary: SuiteSummary | None = None
    tallies: list[EvalTally] = field(default_factory=list)
    """Each eval's tally, as its last run was reported (then those unfinished when the suite ended)."""

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        self.plan, self.problems = list(plan), list(problems)

    def run_finished(self, result: RunResult) -> None:
        self.results.append(result)

    def eval_finished(self, tally: EvalTally, summary: SuiteSummary) -> None:
        self.tallies.append(tally)

    def finish(self, summary: SuiteSummary) -> None:
        self.summary = summary
        self.tallies.extend(summary.unfinished)

    def by_id(self) -> dict[str, RunResult]:
        return {r.eval_id: r for r in self.results}


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def run_project(
    root: Path,
    *,
    keyword: str | None = None,
    tags: Sequence[str] = (),
    runs: int = 1,
    concurrency: int = 4,
    **suite: Any,
) -> Kept:
    """Discover, plan and run every eval under `root/evals` with the config found at `root`."""
    config = load_config(root)
    found = discover(root, ["evals"])
    plan = expand(found.evals, root=root, suite_variants=config.variants)
    entries = select(plan.evals, keyword=keyword, tags=tags)
    options = SuiteOptions(
        runs=runs,
        concurrency=concurrency,
        exec=ExecOptions(timeout=30, agent=config.agent, root=root, judge=config.judge, no_cache=True),
        **suite,
    )
    kept = Kept()
    anyio.run(run_suite, entries, [*found.errors, *plan.errors], options, [kept])
    return kept
