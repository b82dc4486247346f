"""What an eval leaves behind that would keep the process from ending: its non-daemon threads.

Python waits for every non-daemon thread before it exits, so one an eval started and never stopped keeps
`niceeval run` alive after its reports are written, forever. Each run notes the non-daemon threads that appeared
while it ran and are still alive when it ends; at exit the command names their evals and leaves without them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_started_by: dict[threading.Thread, str] = {}
"""Each stray non-daemon thread, and the eval during whose run it appeared (the first such eval)."""


def _non_daemon() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if not t.daemon and t is not threading.main_thread()}


@contextmanager
def watching(eval_id: str) -> Iterator[None]:
    """Note the non-daemon threads that appear while the block runs and are still alive when it ends."""
    before = set(threading.enumerate())  # every thread: only the new ones are asked whether they are daemons
    try:
        yield
    finally:
        for thread in threading.enumerate():
            if thread not in before and not thread.daemon:
                _started_by.setdefault(thread, eval_id)


_LOOP_WORKER = "AnyIO worker thread"
"""The name of the event loop's worker threads (anyio's pool, which an eval's `to_thread` call borrows too): told
to stop as the loop ends, they may still be finishing. Only one still busy past `_LOOP_WORKERS_END_S` is a stray."""
_LOOP_WORKERS_END_S = 2.0


def stray_threads() -> list[str]:
    """The non-daemon threads still alive, each as `'NAME' (started during EVAL_ID)`. The loop's own worker threads
    are waited for a moment first: they stop when the loop ends, a little after `anyio.run` has returned (later on
    Python 3.12+, whichever eval first borrowed them)."""
    deadline = time.monotonic() + _LOOP_WORKERS_END_S
    for thread in _non_daemon():
        if thread.name == _LOOP_WORKER:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
    alive = _non_daemon()
    return [
        f"{thread.name!r} (started during {_started_by[thread]})" if thread in _started_by else repr(thread.name)
        for thread in sorted(alive, key=lambda t: t.name)
    ]
