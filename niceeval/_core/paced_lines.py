"""Lines for a stream that sends every write on at once (`PYTHONUNBUFFERED=1`, `python -u`), written together.

Without a terminal the console prints one line per eval. On such a stream each line was a system call of its own
on the event loop, and at each one a pool thread running a plain `def` eval took the interpreter, so the loop then
waited to get it back: about a tenth of a big cheap suite's CPU. `PacedLines` takes the lines and a daemon thread
writes them together, one write at most `PACE_S` after the first of them came in: a line still shows within a
twentieth of a second however long the next eval takes, which is what an unbuffered stream was asked for. The
lines keep their order; `flush` (a reporter's end, and the process's exit) writes what is left on the caller's
thread.
"""

from __future__ import annotations

import atexit
import contextlib
import sys
import threading
import time
from typing import TextIO

PACE_S = 0.05
"""How long the first line of a batch waits for the lines that follow it."""


def write_text(stream: TextIO, text: str) -> None:
    """`text` on `stream`; characters its encoding cannot hold (`PYTHONIOENCODING=ascii`) as backslash escapes."""
    try:
        stream.write(text)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "ascii"
        stream.write(text.encode(encoding, "backslashreplace").decode(encoding))


def sends_each_write(stream: TextIO) -> bool:
    """Whether `stream` is this process's own stdout or stderr and sends each write (or line) on at once."""
    if stream is not sys.__stdout__ and stream is not sys.__stderr__:
        return False
    return bool(getattr(stream, "write_through", False) or getattr(stream, "line_buffering", False))


class PacedLines:
    """Text for `stream`, gathered and written by a daemon thread at most `pace_s` after it came (see the module)."""

    def __init__(self, stream: TextIO, *, pace_s: float = PACE_S) -> None:
        self._stream = stream
        self._pace_s = pace_s
        self._lock = threading.Lock()
        """Guards `_pending` and `_thread`: held only to add or take text, never across a write."""
        self._writing = threading.Lock()
        """Held from taking the pending text to its write's end: two writers never swap their batches."""
        self._pending: list[str] = []
        self._due = threading.Event()
        """Set when text comes in and none was pending: the thread's turn to write, after `pace_s`."""
        self._thread: threading.Thread | None = None
        self._broken = False
        """The thread's write failed (a closed pipe, a closed stream): the caller writes, and meets the failure."""

    def write(self, text: str) -> None:
        """Take `text`; it is written within `pace_s` (the caller never waits for the stream)."""
        if self._broken:
            self.flush()
            write_text(self._stream, text)
            return
        with self._lock:
            self._pending.append(text)
            if len(self._pending) > 1:  # the thread's write is due already
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="niceeval-paced-lines", daemon=True)
                self._thread.start()
                atexit.register(self._flush_at_exit)  # a daemon thread ends with the process: its text goes first
        self._due.set()

    def flush(self) -> None:
        """Write the pending text now, on the caller's thread (after the thread's write under way, if any)."""
        with self._writing:
            with self._lock:
                text = "".join(self._pending)
                self._pending.clear()
            if text:
                write_text(self._stream, text)

    def _flush_at_exit(self) -> None:
        with contextlib.suppress(OSError, ValueError):  # a stream closed by then has nobody to tell
            self.flush()

    def _serve(self) -> None:
        while True:
            self._due.wait()
            self._due.clear()  # text coming in from now sets it again once this write has taken what is pending
            time.sleep(self._pace_s)
            try:
                self.flush()
            except (OSError, ValueError):  # the stream is gone; the next write on the caller's thread says so
                self._broken = True
                return
