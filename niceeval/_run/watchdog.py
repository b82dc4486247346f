"""The loop watchdog: a blocking call inside `async def` stalls every other eval, so it must not go unnoticed.

A heartbeat task in the event loop stamps the time every `tick` seconds; a daemon thread checks the stamp. When
the loop has not beaten for more than `threshold` seconds, the thread looks at the loop thread's stack (it is
stuck there, so the stack says who is blocking it), finds the eval function on it and the innermost user frame,
and warns once per stall: on stderr at once (a stall that never ends still gets named) and on the run's record.
A stall inside niceeval's own code (on the stack below the user's line) is told apart: niceeval names itself,
and the user's run is not blamed.
Cheap: two wake-ups per tick, no work while the loop is healthy.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import sys
import threading
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, FrameType

import anyio

from niceeval._core.errors import is_framework_file, is_niceeval_file, relative
from niceeval._eval.context import ContextBase, state_of
from niceeval._run.discovery import EvalEntry


class LoopWatchdog:
    """Watches the event loop of the thread that made it; use `watching()` around the suite."""

    def __init__(self, entries: Sequence[EvalEntry], *, threshold: float = 1.0, tick: float = 0.25) -> None:
        self.threshold = threshold
        self.tick = tick
        self._evals: Mapping[CodeType, EvalEntry] = {e.spec.fn.__code__: e for e in entries}
        self._loop_thread = threading.get_ident()
        self._beat = time.monotonic()
        self._warned_beat = -1.0
        self._stop = threading.Event()

    async def _heartbeat(self) -> None:
        while True:
            self._beat = time.monotonic()
            await anyio.sleep(self.tick)

    @asynccontextmanager
    async def watching(self) -> AsyncIterator[None]:
        """Watch the loop (heartbeat task and checking thread) for the duration of the block."""
        self._beat = time.monotonic()
        thread = threading.Thread(target=self._watch, name="niceeval-loop-watchdog", daemon=True)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._heartbeat)
            thread.start()
            try:
                yield
            finally:
                self._stop.set()
                tg.cancel_scope.cancel()
        thread.join(timeout=self.tick * 4)

    def _watch(self) -> None:
        woke = time.monotonic()
        while not self._stop.wait(self.tick):
            now, slept = time.monotonic(), time.monotonic() - woke
            woke = now
            if slept > self.tick + self.threshold / 2:
                continue  # this thread overslept too: the whole process waited for a CPU, nobody blocked the loop
            beat = self._beat
            stalled = now - beat
            if stalled > self.threshold and beat != self._warned_beat:
                frame = sys._current_frames().get(self._loop_thread)
                if frame is None or _waiting_for_io(frame):
                    continue  # the loop is idle in its selector: late, not blocked
                self._warned_beat = beat
                with contextlib.suppress(Exception):  # a watchdog must never take the suite down
                    self._warn(frame, stalled)

    def _warn(self, frame: FrameType, stalled: float) -> None:
        entry, context, site = self._blame(frame)
        if site.ours:
            # niceeval's own code on the loop: a bug of ours, not the user's; never recorded against their eval
            reached = f", reached from {site.called_from}" if site.called_from else ""
            message = (
                f"niceeval itself blocked the event loop for over {self.threshold:g} s at {site.where}{reached}; "
                "every eval waited meanwhile. This is not a blocking call of yours: please report it to niceeval."
            )
            print(f"niceeval: warning: {message} ({stalled:.1f} s so far)", file=sys.stderr, flush=True)
            return
        what = f"eval {entry.id}" if entry is not None else "something outside any eval"
        message = (
            f"{what} blocked the event loop for over {self.threshold:g} s{f' at {site.where}' if site.where else ''}; "
            "every other eval and its timeout waited meanwhile. Blocking calls (time.sleep, requests, heavy CPU) "
            "in `async def` stall the suite: use `await anyio.sleep()`, `await anyio.to_thread.run_sync(...)`, "
            "or make the eval a plain `def`."
        )
        print(f"niceeval: warning: {message} ({stalled:.1f} s so far)", file=sys.stderr, flush=True)
        if isinstance(context, ContextBase):
            state_of(context).warnings.append(message)

    def _blame(self, frame: FrameType | None) -> tuple[EvalEntry | None, object, StallSite]:
        """The eval whose function is on the stack (and its context `t`), and where the loop is stuck."""
        entry: EvalEntry | None = None
        context: object = None
        stack: list[tuple[str, int]] = []
        while frame is not None:
            code = frame.f_code
            stack.append((code.co_filename, frame.f_lineno))
            if code in self._evals:
                entry = self._evals[code]
                if code.co_argcount:
                    context = frame.f_locals.get(code.co_varnames[0])
                break
            frame = frame.f_back
        return entry, context, stall_site(stack)


_PACKAGE_PARENT = Path(__file__).resolve().parent.parent.parent


def _waiting_for_io(frame: FrameType) -> bool:
    """The loop thread is inside the event loop's own wait for I/O (`selectors`, or the Windows proactor)."""
    filename = frame.f_code.co_filename
    return filename == selectors.__file__ or os.path.basename(filename) == "windows_events.py"


@dataclass(frozen=True, slots=True)
class StallSite:
    """Where a stalled loop is stuck: the innermost frame of niceeval's or the user's code."""

    where: str | None
    ours: bool = False
    """The loop is stuck in niceeval's own code (an import, say), not in a call the user made."""
    called_from: str | None = None
    """For `ours`: the user's line that led there (e.g. their `await t.send(...)`)."""


def stall_site(stack: Sequence[tuple[str, int]]) -> StallSite:
    """Blame a stall on the innermost frame that is niceeval's or the user's (`stack` innermost first).

    Frames of the standard library, installed packages and the import machinery are skipped: a user's
    `requests.get` is the user's line, and an SDK imported by niceeval inside a coroutine is niceeval's line.
    """
    for index, (filename, line) in enumerate(stack):
        if is_niceeval_file(filename):
            caller = next((f"{relative(f)}:{n}" for f, n in stack[index + 1 :] if not is_framework_file(f)), None)
            inside = Path(filename).resolve().relative_to(_PACKAGE_PARENT).as_posix()  # niceeval/..., wherever it is
            return StallSite(where=f"{inside}:{line}", ours=True, called_from=caller)
        if not is_framework_file(filename):
            return StallSite(where=f"{relative(filename)}:{line}")
    return StallSite(where=None)
