"""Live progress on a terminal: done/total, passed/failed so far, elapsed, ETA, spend, and the runs in flight.

The display is redrawn a few times a second by rich's `Live` (so the elapsed time and the ages of running evals
move even while nothing finishes: a long run never looks frozen), not on every start and finish: a redraw per event
made the terminal a fast suite's bottleneck. Without the refresh thread (`refresh_per_second=None`) every start and
finish redraws it. It reads an
injected clock, so tests render it at chosen instants. Eval ids are untrusted text: shown cleaned, as `Text`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from niceeval._core.results import RunResult
from niceeval._core.text import clean
from niceeval._core.wording import usd

Clock = Callable[[], float]
_BAR_WIDTH = 24
_SHOWN_RUNNING = 4


def clock_text(seconds: float) -> str:
    """`75.2` -> `1:15`; `3725` -> `1:02:05`."""
    whole = max(int(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@dataclass(kw_only=True)
class ProgressState:
    """What the display shows; updated from the event loop, read by the refresh thread (under a lock)."""

    total: int
    started_at: float
    done: int = 0
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    cost: float = 0.0
    unpriced: bool = False
    running: dict[tuple[str, int], float] = field(default_factory=dict)
    """(eval id, run index) -> when it started."""


class LiveProgress:
    """The live display of one suite. `start`, then `run_started`/`run_finished` per run, then `stop`.

    Args:
        console: Where to draw (a terminal; the caller decides whether to show progress at all).
        clock: Seconds, monotonic (`time.monotonic` in real use).
        strict: `scored` runs count as failed.
        refresh_per_second: Redraws per second from a background thread; `None` redraws only on events.
    """

    def __init__(
        self, console: Console, *, clock: Clock, strict: bool = False, refresh_per_second: float | None = 4.0
    ) -> None:
        self._console = console
        self._clock = clock
        self._strict = strict
        self._refresh = refresh_per_second
        self._lock = threading.Lock()
        self._state = ProgressState(total=0, started_at=clock())
        self._live: Live | None = None

    def start(self, total: int) -> None:
        """Take the plan and the problems found while loading it."""
        self._state = ProgressState(total=total, started_at=self._clock())
        self._live = Live(
            console=self._console,
            transient=True,
            auto_refresh=self._refresh is not None,
            refresh_per_second=self._refresh or 4.0,
            get_renderable=self.render,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._live.start()

    def run_started(self, eval_id: str, run_index: int) -> None:
        """Note that a run has started."""
        with self._lock:
            self._state.running[(eval_id, run_index)] = self._clock()
        self._redraw()

    def add_to_total(self, runs: int) -> None:
        """More runs planned (adaptive repeats decided as the suite goes)."""
        with self._lock:
            self._state.total += runs

    def run_finished(self, result: RunResult) -> None:
        """Take one finished run."""
        with self._lock:
            state = self._state
            state.running.pop((result.eval_id, result.run_index), None)
            state.done += 1
            if result.outcome == "skipped":
                state.skipped += 1
            elif result.outcome == "failed" or (result.outcome == "scored" and self._strict):
                state.failed += 1
            else:
                state.passed += 1
            for spent in (result.agent_spend, result.judge_spend):
                if spent.cost is None:
                    state.unpriced = True
                else:
                    state.cost += spent.cost
        self._redraw()

    def stop(self) -> None:
        """Stop the live display."""
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _redraw(self) -> None:
        # With a refresh thread, it draws the news within a fraction of a second (see the module's docstring).
        if self._live is not None and self._refresh is None:
            self._live.refresh()

    def render(self) -> Group:
        """The display as it is now: a status line, then the longest-running evals."""
        with self._lock:
            state = self._state
            now = self._clock()
            running = sorted(state.running.items(), key=lambda item: item[1])
            return Group(self._status_line(state, now), *self._running_lines(running, now))

    def _status_line(self, state: ProgressState, now: float) -> Text:
        elapsed = now - state.started_at
        filled = _BAR_WIDTH * state.done // state.total if state.total else _BAR_WIDTH
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append("━" * filled, style="green")
        line.append("━" * (_BAR_WIDTH - filled), style="grey35")
        line.append(f" {state.done}/{state.total}", style="bold")
        line.append(f"  ✓ {state.passed}", style="green")
        line.append(f"  ✗ {state.failed}", style="red" if state.failed else "dim")
        if state.skipped:
            line.append(f"  ↷ {state.skipped}", style="dim")
        line.append(f"  · {clock_text(elapsed)} elapsed", style="dim")
        if 0 < state.done < state.total:
            eta = elapsed / state.done * (state.total - state.done)
            line.append(f" · ETA {clock_text(eta)}", style="dim")
        if state.cost or state.unpriced:
            more = " + unpriced" if state.unpriced else ""
            line.append(f" · {usd(state.cost)}{more}", style="dim")
        return line

    @staticmethod
    def _running_lines(running: list[tuple[tuple[str, int], float]], now: float) -> list[Text]:

        lines = []
        for (eval_id, run_index), started in running[:_SHOWN_RUNNING]:
            line = Text("  ▸ ", style="cyan", no_wrap=True, overflow="ellipsis")
            line.append(clean(eval_id, 100))
            if run_index:
                line.append(f" (run {run_index + 1})", style="dim")
            line.append(f"  {clock_text(now - started)}", style="dim")
            lines.append(line)
        if len(running) > _SHOWN_RUNNING:
            lines.append(Text(f"  … and {len(running) - _SHOWN_RUNNING} more running", style="dim"))
        return lines
