"""The live progress display, rendered at chosen instants of an injected clock (snapshots of what a user sees)."""

from __future__ import annotations

import io

from rich.console import Console

from niceeval._core.results import RunResult, Spend
from niceeval._core.summary import EvalTally, PlannedEval, SuiteSummary
from niceeval.report import ConsoleReporter
from niceeval.report.progress import LiveProgress, clock_text


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def run(eval_id: str, outcome: str, *, index: int = 0, cost: float | None = 0.0) -> RunResult:
    return RunResult.model_validate(
        dict(
            eval_id=eval_id,
            file="evals/x.py",
            line=1,
            run_index=index,
            outcome=outcome,
            duration_s=1.0,
            agent_spend=Spend(calls=1, tokens=10, cost=cost),
        )
    )


def terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=100, force_terminal=True, color_system=None, legacy_windows=False), out


def snapshot(progress: LiveProgress) -> str:
    out = io.StringIO()
    Console(file=out, width=100, color_system=None).print(progress.render())
    return out.getvalue()


def started_progress(total: int) -> tuple[LiveProgress, FakeClock]:
    clock = FakeClock()
    progress = LiveProgress(terminal()[0], clock=clock, refresh_per_second=None)
    progress.start(total)
    return progress, clock


def test_progress_shows_counts_elapsed_eta_spend_and_running_evals() -> None:
    progress, clock = started_progress(8)
    for i in range(4):
        progress.run_started(f"evals/a.py::e{i}", 0)
    clock.now += 10
    progress.run_finished(run("evals/a.py::e0", "passed", cost=0.0125))
    progress.run_finished(run("evals/a.py::e1", "failed", cost=0.0025))
    clock.now += 20
    progress.run_started("evals/b.py::later", 2)
    clock.now += 5
    assert snapshot(progress) == (
        "━━━━━━━━━━━━━━━━━━━━━━━━ 2/8  ✓ 1  ✗ 1  · 0:35 elapsed · ETA 1:45 · $0.0150\n"
        "  ▸ evals/a.py::e2  0:35\n"
        "  ▸ evals/a.py::e3  0:35\n"
        "  ▸ evals/b.py::later (run 3)  0:05\n"
    )
    progress.stop()


def test_elapsed_moves_while_nothing_finishes() -> None:
    progress, clock = started_progress(1)
    progress.run_started("evals/slow.py::long", 0)
    clock.now += 185
    assert snapshot(progress).splitlines()[0].endswith("0/1  ✓ 0  ✗ 0  · 3:05 elapsed")
    assert "evals/slow.py::long  3:05" in snapshot(progress)
    progress.stop()


def test_more_than_four_running_are_summarised() -> None:
    progress, _ = started_progress(10)
    for i in range(7):
        progress.run_started(f"evals/a.py::e{i}", 0)
    lines = snapshot(progress).splitlines()
    assert lines[1:5] == [f"  ▸ evals/a.py::e{i}  0:00" for i in range(4)]
    assert lines[5] == "  … and 3 more running"
    progress.stop()


def test_scored_counts_as_failed_under_strict_and_unpriced_spend_is_flagged() -> None:
    clock = FakeClock()
    progress = LiveProgress(terminal()[0], clock=clock, strict=True, refresh_per_second=None)
    progress.start(3)
    progress.run_finished(run("evals/a.py::soft", "scored", cost=None))
    progress.run_finished(run("evals/a.py::skip", "skipped"))
    line = snapshot(progress).splitlines()[0]
    assert "✓ 0  ✗ 1  ↷ 1" in line
    assert "$0 + unpriced" in line
    progress.stop()


def test_hostile_eval_ids_are_shown_as_text() -> None:
    progress, _ = started_progress(1)
    progress.run_started("evals/a.py::[bold]x[/]\x1b[2J", 0)
    assert "[bold]x[/]\\x1b[2J" in snapshot(progress)
    progress.stop()


def test_clock_text_formats_minutes_and_hours() -> None:
    assert [clock_text(s) for s in (0, 59.9, 75.2, 3725)] == ["0:00", "0:59", "1:15", "1:02:05"]


def test_with_a_refresh_thread_starts_and_finishes_draw_nothing_themselves() -> None:
    console, out = terminal()
    progress = LiveProgress(console, clock=FakeClock(), refresh_per_second=0.01)  # its thread draws every 100 s
    progress.start(1000)
    drawn = out.getvalue()
    for i in range(500):
        progress.run_started(f"evals/a.py::e{i}", 0)
        progress.run_finished(run(f"evals/a.py::e{i}", "passed"))
    assert out.getvalue() == drawn  # a redraw per event made the terminal a fast suite's bottleneck
    assert "500/1000  ✓ 500" in snapshot(progress)  # what the next refresh draws
    progress.stop()


def test_without_a_refresh_thread_every_finish_is_drawn() -> None:
    console, out = terminal()
    progress = LiveProgress(console, clock=FakeClock(), refresh_per_second=None)
    progress.start(2)
    progress.run_finished(run("evals/a.py::one", "passed"))
    assert "1/2  ✓ 1" in out.getvalue()
    progress.stop()


def test_console_reporter_draws_progress_on_a_terminal_and_clears_it() -> None:
    console, out = terminal()
    reporter = ConsoleReporter(console, clock=FakeClock(), refresh_per_second=None)
    plan = [PlannedEval(id="evals/a.py::one", file="evals/a.py", line=1)]
    reporter.start(plan, [])
    reporter.run_started("evals/a.py::one", 0)
    assert "▸ evals/a.py::one" in out.getvalue()
    tally = EvalTally(eval=plan[0])
    finished = run("evals/a.py::one", "passed")
    tally.add(finished)
    reporter.run_finished(finished)
    reporter.finish(SuiteSummary.of([tally], problems=[], duration_s=1.0, strict=False, min_pass_rate=1.0))
    assert "1 passed" in out.getvalue()


def test_console_reporter_without_a_terminal_prints_no_progress() -> None:
    out = io.StringIO()
    reporter = ConsoleReporter(Console(file=out, width=100, force_terminal=False), clock=FakeClock())
    reporter.start([PlannedEval(id="evals/a.py::one", file="evals/a.py", line=1)], [])
    reporter.run_started("evals/a.py::one", 0)
    assert "▸" not in out.getvalue() and "━" not in out.getvalue()
