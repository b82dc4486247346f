"""Adaptive repeats in the runner: `--runs LOW..HIGH`, `define_eval(runs=N)`, the runs saved, bad flags."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import anyio
import pytest
from rich.console import Console

from niceeval import EvalContext, define_eval
from niceeval._core.summary import EvalTally, SuiteSummary
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions
from niceeval._run.suite import SuiteOptions, run_suite
from niceeval.cli import main
from niceeval.cli._api import KeptRuns
from niceeval.expect import equals
from niceeval.report import ConsoleReporter
from niceeval.stats import AdaptiveRuns

calls: Counter[str] = Counter()


@define_eval
async def steady(t: EvalContext) -> None:
    calls["steady"] += 1
    t.check("ok", equals("ok"))


@define_eval
async def flaky(t: EvalContext) -> None:
    calls["flaky"] += 1
    t.check("ok" if calls["flaky"] % 4 else "flake", equals("ok"))  # every 4th run fails: 75%


@define_eval
async def broken(t: EvalContext) -> None:
    calls["broken"] += 1
    t.check("no", equals("ok"))


@define_eval
async def judged(t: EvalContext) -> None:
    calls["judged"] += 1
    t.check("ok", equals("ok"))


@define_eval
async def missed_once(t: EvalContext) -> None:
    calls["missed_once"] += 1
    t.check("flake" if calls["missed_once"] == 2 else "ok", equals("ok"))  # 1 of its first 3 runs fails


@define_eval(runs=2)
async def pinned(t: EvalContext) -> None:
    calls["pinned"] += 1


def suite(
    specs: list[EvalSpec], runs: int | AdaptiveRuns, gate: float = 1.0
) -> tuple[SuiteSummary, str, list[EvalTally]]:
    calls.clear()
    adaptive = runs if isinstance(runs, AdaptiveRuns) else None
    options = SuiteOptions(
        runs=adaptive.least if adaptive else int(runs),  # type: ignore[arg-type]
        adaptive=adaptive,
        min_pass_rate=gate,
        concurrency=4,
        exec=ExecOptions(timeout=10),
    )
    out = io.StringIO()
    console = ConsoleReporter(Console(file=out, width=200, highlight=False), min_pass_rate=gate)
    entries = [EvalEntry(id=f"x.py::{spec.name}", spec=spec) for spec in specs]
    kept = KeptRuns()
    summary = anyio.run(run_suite, entries, [], options, [console, kept])
    return summary, out.getvalue(), kept.tallies()


def done(tallies: list[EvalTally]) -> dict[str, int]:
    return {t.eval.id.split("::")[1]: t.done for t in tallies}


def test_below_one_a_steady_eval_stops_early_and_a_flaky_one_repeats_to_the_bound() -> None:
    summary, out, summary_tallies = suite([steady, flaky, broken], AdaptiveRuns(least=3, most=20), gate=0.8)
    # 16 of 16: Wilson 0.806-1.00 clears 0.8; 3 of 4 keeps straddling it up to 20; 0 of 3 (0.00-0.56) is below
    assert done(summary_tallies) == {"steady": 16, "flaky": 20, "broken": 3}
    assert dict(calls) == {"steady": 16, "flaky": 20, "broken": 3}
    assert summary.runs_saved == 4 + 0 + 17 and summary.adaptive_most == 20
    assert [t.eval.runs for t in summary_tallies] == [16, 20, 3]
    assert "adaptive repeats: 39 runs made, 21 runs saved against --runs 20" in out
    # each eval is reported once, after its last run, with every run counted
    assert out.count("x.py::steady") == 1 and "16/16 runs passed" in out
    assert out.count("x.py::flaky") == 1 and "15/20 runs passed (75%)" in out
    assert summary.exit_code == 1  # flaky (75%) and broken fail the gate


def test_at_the_default_gate_passes_repeat_to_the_bound_and_a_failure_stops() -> None:
    summary, out, summary_tallies = suite([steady, broken], AdaptiveRuns(least=3, most=6))
    assert done(summary_tallies) == {"steady": 6, "broken": 3}
    assert summary.runs_saved == 3
    assert "6/6 runs passed" in out and "0/3 runs passed" in out


def test_at_the_default_gate_passing_evals_stop_once_a_tolerated_flake_rate_is_ruled_out() -> None:
    """Issue 41: with `--runs auto` an always-passing and a judged eval ran 20 times each and a flaky one 3, so
    every run saved came from the flaky eval; then the suite's rate pooled the runs (98%, 42 of 43)."""
    summary, out, summary_tallies = suite([steady, judged, missed_once], AdaptiveRuns(least=3, most=20))
    # 16 passes in a row put the failure rate's upper bound (0.194) under the tolerated 0.2; a miss decides
    assert done(summary_tallies) == {"steady": 16, "judged": 16, "missed_once": 3}
    assert summary.runs_saved == 4 + 4 + 17
    assert "adaptive repeats: 35 runs made, 25 runs saved against --runs 20" in out
    # each eval weighs the same, and counts its first 3 runs: (3/3 + 3/3 + 2/3) / 3, not 34 of 35 runs
    assert "pass rate 89% (95% CI" in out and "over 3 cases)" in out


def test_a_tolerated_flake_rate_of_zero_repeats_passing_evals_to_the_bound() -> None:
    summary, _, summary_tallies = suite([steady, broken], AdaptiveRuns(least=3, most=20, tolerated_flake_rate=0.0))
    assert done(summary_tallies) == {"steady": 20, "broken": 3}


def test_a_flaky_eval_is_caught_by_repeats_that_a_fixed_low_count_misses() -> None:
    fixed, _, fixed_tallies = suite([flaky], 3)
    assert fixed.exit_code == 0 and done(fixed_tallies) == {"flaky": 3}  # 3 of 3 passed: the flake was not seen
    adaptive, _, adaptive_tallies = suite([flaky], AdaptiveRuns(least=3, most=10))
    assert adaptive.exit_code == 1 and done(adaptive_tallies) == {"flaky": 4}  # the 4th run failed: settled


def test_define_eval_runs_wins_over_the_flag() -> None:
    summary, _, summary_tallies = suite([pinned, steady], AdaptiveRuns(least=3, most=5))
    assert done(summary_tallies) == {"pinned": 2, "steady": 5}
    assert summary.runs_saved == 0  # only adaptive evals are weighed against HIGH
    fixed, _, fixed_tallies = suite([pinned, steady], 4)
    assert done(fixed_tallies) == {"pinned": 2, "steady": 4} and fixed.runs_saved is None


def test_define_eval_runs_must_be_a_positive_whole_number() -> None:
    from niceeval import UsageError

    for bad in (0, 2.5, True):
        with pytest.raises(UsageError, match=r"define_eval\(runs=\.\.\.\) is a whole number"):
            define_eval(runs=bad)(lambda t: None)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--runs", "5..2"], "--runs 5..2: the bounds need 1 <= LOW <= HIGH"),
        (["--runs", "often"], "--runs 'often': write a number of runs"),
        (["--runs", "0"], "--runs 0: the number of runs must be at least 1"),
        (["--runs", "auto", "--shard", "1/2"], "--runs 3..20 cannot be split into shards"),
        (["--tolerated-flake-rate", "0.1"], "--tolerated-flake-rate goes with --runs LOW..HIGH (or auto)"),
        (["--runs", "auto", "--tolerated-flake-rate", "1"], "--tolerated-flake-rate must be under 1 (e.g. 0.2)"),
        (["--runs", "auto", "--tolerated-flake-rate", "2"], "--tolerated-flake-rate must be between 0 and 1"),
    ],
)
def test_bad_runs_exit_2_naming_the_flag(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    try:
        code = main(["run", *args, "--no-store", str(tmp_path)])
    except SystemExit as exit:
        code = exit.code  # type: ignore[assignment]
    assert code == 2
    assert message in capsys.readouterr().err


def test_the_console_header_names_the_bounds_and_the_progress_total_grows_with_repeats() -> None:
    calls.clear()
    out = io.StringIO()
    console = ConsoleReporter(
        Console(file=out, width=200, force_terminal=True, highlight=False),
        min_pass_rate=0.8,
        refresh_per_second=None,
        runs_label="3..20 runs (adaptive)",
    )
    options = SuiteOptions(
        runs=3, adaptive=AdaptiveRuns(least=3, most=20), min_pass_rate=0.8, exec=ExecOptions(timeout=10)
    )
    entries = [EvalEntry(id=f"x.py::{spec.name}", spec=spec) for spec in (steady, broken)]
    anyio.run(run_suite, entries, [], options, [console])
    assert "niceeval · 2 evals × 3..20 runs (adaptive)" in out.getvalue()
    progress = console._progress
    assert progress is not None
    assert (progress._state.total, progress._state.done) == (16 + 3, 16 + 3)  # planned 6, grown by 13 repeats


def test_junit_names_every_run_of_an_eval_that_repeated_from_one(tmp_path: Path) -> None:
    from niceeval.report import JUnitReporter

    calls.clear()
    path = tmp_path / "report.xml"
    options = SuiteOptions(runs=1, adaptive=AdaptiveRuns(least=1, most=3), exec=ExecOptions(timeout=10))
    entries = [EvalEntry(id=f"x.py::{spec.name}", spec=spec) for spec in (steady, broken)]
    anyio.run(run_suite, entries, [], options, [JUnitReporter(path)])
    names = [case.get("name") for case in ET.parse(path).iter("testcase")]
    assert sorted(names) == ["broken", "steady[run 1]", "steady[run 2]", "steady[run 3]"]


def test_the_tolerated_flake_rate_flag_sets_when_a_passing_eval_is_clear(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "e.py").write_text(
        "from niceeval import define_eval\n\n@define_eval\ndef passes(t):\n    pass\n", encoding="utf-8"
    )
    code = main(["run", "--runs", "auto", "--tolerated-flake-rate", "0.25", "--no-store", str(tmp_path / "evals")])
    assert code == 0
    assert "12/12 runs passed" in capsys.readouterr().out  # the failure rate's upper bound: 0.243 after 12
