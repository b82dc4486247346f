"""`--runs N` repeats run at the same time; `sequential_runs=True` runs them one after another."""

from __future__ import annotations

import anyio
import pytest

from niceeval import EvalContext, UsageError, define_eval
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions
from niceeval._run.suite import SuiteOptions, run_suite
from niceeval.cli import main


class Overlap:
    """Counts how many runs are inside the eval at once."""

    def __init__(self) -> None:
        self.active = 0
        self.peak = 0
        self.order: list[str] = []

    async def visit(self, name: str) -> None:
        self.active += 1
        self.peak = max(self.peak, self.active)
        self.order.append(f"{name}+")
        await anyio.sleep(0.02)
        self.order.append(f"{name}-")
        self.active -= 1


def run(spec: EvalSpec, runs: int = 4) -> None:
    options = SuiteOptions(runs=runs, concurrency=8, exec=ExecOptions(timeout=10))
    summary = anyio.run(run_suite, [EvalEntry(id=f"x.py::{spec.name}", spec=spec)], [], options, [])
    assert summary.exit_code == 0


def test_repeats_of_an_eval_run_at_the_same_time_by_default() -> None:
    seen = Overlap()

    @define_eval
    async def shared(t: EvalContext) -> None:
        await seen.visit("run")

    run(shared)
    assert seen.peak == 4


def test_sequential_runs_run_the_repeats_one_after_another() -> None:
    seen = Overlap()

    @define_eval(sequential_runs=True)
    async def shared(t: EvalContext) -> None:
        await seen.visit("run")

    run(shared)
    assert seen.peak == 1
    assert seen.order == ["run+", "run-"] * 4


def test_sequential_runs_takes_a_bool() -> None:
    with pytest.raises(UsageError, match=r"define_eval\(sequential_runs=...\) is True or False"):
        define_eval(sequential_runs="yes")  # type: ignore[call-overload]


def test_run_help_says_repeats_run_at_the_same_time(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "the repeats run at the same time" in help_text and "sequential_runs=True" in help_text
