"""The loop watchdog: a blocking call inside `async def` stalls every other eval, so it must not go unnoticed.

A heartbeat task in the event loop stamps the time every `tick` seconds; a daemon thread checks the stamp. When
the loop has not beaten for more than `threshold` seconds, the thread looks at the loop thread's stack (it is
stuck there, so the stack says who is blocking it), finds the eval function on it and the innermost user frame,
and warns once per stall: on stderr at once (a stall that never ends still gets named) and on the run's record.
Cheap: two wake-ups per tick, no work while the loop is healthy.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from types import CodeType, FrameType

import anyio

from niceeval._core.errors import is_framework_file, relative
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
        while not self._stop.wait(self.tick):
            beat = self._beat
            stalled = time.monotonic() - beat
            if stalled > self.threshold and beat != self._warned_beat:
                self._warned_beat = beat
                with contextlib.suppress(Exception):  # a watchdog must never take the suite down
                    self._warn(stalled)

    def _warn(self, stalled: float) -> None:
        frame = sys._current_frames().get(self._loop_thread)
        entry, context, where = self._blame(frame)
        what = f"eval {entry.id}" if entry is not None else "something outside any eval"
        message = (
            f"{what} blocked the event loop for over {self.threshold:g} s{f' at {where}' if where else ''}; "
            "every other eval and its timeout waited meanwhile. Blocking calls (time.sleep, requests, heavy CPU) "
            "in `async def` stall the suite: use `await anyio.sleep()`, `await anyio.to_thread.run_sync(...)`, "
            "or make the eval a plain `def`."
        )
        print(f"niceeval: warning: {message} ({stalled:.1f} s so far)", file=sys.stderr, flush=True)
        state = getattr(context, "_state", None)
        warnings = getattr(state, "warnings", None)
        if isinstance(warnings, list):
            warnings.append(message)

    def _blame(self, frame: FrameType | None) -> tuple[EvalEntry | None, object, str | None]:
        """The eval whose function is on the stack (and its context `t`), and the innermost user frame."""
        entry: EvalEntry | None = None
        context: object = None
        where: str | None = None
        while frame is not None:
            code = frame.f_code
            if where is None and not is_framework_file(code.co_filename):
                where = f"{relative(code.co_filename)}:{frame.f_lineno}"
            if code in self._evals:
                entry = self._evals[code]
                if code.co_argcount:
                    context = frame.f_locals.get(code.co_varnames[0])
                break
            frame = frame.f_back
        return entry, context, where
