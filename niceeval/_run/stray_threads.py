"""What an eval leaves behind that would keep the process from ending: its non-daemon threads.

Python waits for every non-daemon thread before it exits, so one an eval started and never stopped keeps
`niceeval run` alive after its reports are written, forever. Each run notes the non-daemon threads that appeared
while it ran and are still alive when it ends; at exit the command names their evals and leaves without them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_started_by: dict[threading.Thread, str] = {}
"""Each stray non-daemon thread, and the eval during whose run it appeared (the first such eval)."""


def _non_daemon() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if not t.daemon and t is not threading.main_thread()}


@contextmanager
def watching(eval_id: str) -> Iterator[None]:
    """Note the non-daemon threads that appear while the block runs and are still alive when it ends."""
    before = _non_daemon()
    try:
        yield
    finally:
        for thread in _non_daemon() - before:
            _started_by.setdefault(thread, eval_id)


_LOOP_WORKER = "AnyIO worker thread"
"""The name of the event loop's worker threads: told to stop as the loop ends, they may still be finishing."""


def stray_threads() -> list[str]:
    """The non-daemon threads still alive, each as `'NAME' (started during EVAL_ID)`. The loop's own worker
    threads (niceeval's imports off the loop before the evals start) are waited for a moment first: they stop
    when the loop ends, a little after `anyio.run` has returned."""
    for thread in _non_daemon():
        if thread.name == _LOOP_WORKER and thread not in _started_by:
            thread.join(timeout=1.0)
    alive = _non_daemon()
    return [
        f"{thread.name!r} (started during {_started_by[thread]})" if thread in _started_by else repr(thread.name)
        for thread in sorted(alive, key=lambda t: t.name)
    ]
