"""The compare page's diffs: a small pair's computed in the request, a large pair's by a background thread so
that no request waits seconds for one.

A diff of two 100,000-eval runs takes seconds to compute, and a page should answer within one. The page asks
`DiffWorker.diff`: a pair of runs of up to `inline_evals` evals each is diffed in the request (a few thousand
evals take a fraction of a second, and a small suite's page shows at once, as it always did). A larger pair's
diff kept in the store (`Store.kept_diff`) is read at once; else the pair is handed to the worker and the page
says the diff is being computed and refreshes itself until it is ready. A refresh while the worker computes asks
the worker alone, not the store (the kept diff is not there yet): the request shares the interpreter with the
worker, and waits for it at each query; and while it computes the interpreter offers the GIL every half
millisecond instead of every 5 (`COMPUTING_SWITCH_S`), so each such wait is short.

One worker thread computes one pair at a time: pages asking for one pair share its computation, and a burst of
requests for many pairs queues instead of running many multi-second diffs side by side on the viewer's threads.
The diff of two closed runs is kept in the store by `Store.diff`, so it outlives the viewer. The diff of a pair
with a run still running cannot be kept (the run changes): the worker holds it until a page reads it once.
"""

from __future__ import annotations

import queue
import sys
import threading
from concurrent.futures import Future
from dataclasses import dataclass

from niceeval.store import DiffOptions, RunDiff, Store, SuiteRunInfo

INLINE_EVALS = 2_000
"""The most evals a side of a pair may have for its diff to be computed in the request."""
COMPUTING_SWITCH_S = 0.0005
"""How often the interpreter offers the GIL to another thread while the worker computes (Python's default: every
5 ms): a request waits for the worker at each of its queries, and would wait 5 ms each time."""
MOST_HELD = 32
"""Finished diffs held for pages that have not read them yet (a page left before its diff was ready): the oldest
beyond this are dropped (a closed pair's diff stays kept in the store)."""


@dataclass(frozen=True, slots=True)
class _Pair:
    """A pair as it stands: a run reopened or closed again is another pair (its held diff is of the runs before)."""

    base: str
    head: str
    options: DiffOptions
    stamps: tuple[object, ...]


class DiffWorker:
    """Diffs for the compare page: in the request for a small pair, else by one background thread (started on the
    first large pair it is asked for)."""

    def __init__(self, store: Store, *, inline_evals: int = INLINE_EVALS) -> None:
        self._store = store
        self._inline_evals = inline_evals
        self._lock = threading.Lock()
        self._jobs: dict[_Pair, Future[RunDiff]] = {}
        self._queue: queue.SimpleQueue[_Pair] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def diff(self, base: SuiteRunInfo, head: SuiteRunInfo, options: DiffOptions) -> RunDiff | None:
        """The diff of `base` and `head`: computed now for a small pair, kept or finished by the worker for a large
        one; None while the worker computes it (ask again later). Raises what `Store.diff` raises (ConfigError for
        a pair that cannot be compared), to the request that reads the finished job."""
        if max(base.evals, head.evals) <= self._inline_evals:
            return self._store.diff(base.id, head.id, options)
        stamps = (base.status, base.finished_at, head.status, head.finished_at)
        pair = _Pair(base=base.id, head=head.id, options=options, stamps=stamps)
        with self._lock:
            job = self._jobs.get(pair)
            if job is not None and not job.done():  # a refresh while it computes: nothing to read from the store
                return None
        kept = self._store.kept_diff(base.id, head.id, options)
        if kept is not None:
            return kept
        with self._lock:
            job = self._jobs.get(pair)
            if job is None:
                self._queue_job(pair)
                return None
            if not job.done():
                return None
            del self._jobs[pair]
        return job.result()

    def _queue_job(self, pair: _Pair) -> None:
        """Queue a job for `pair` (holding the lock), dropping the oldest unread finished jobs beyond `MOST_HELD`,
        and start the thread on the first."""
        finished = [held for held, job in self._jobs.items() if job.done()]
        for held in finished[: max(0, len(finished) - MOST_HELD + 1)]:
            del self._jobs[held]
        self._jobs[pair] = Future()
        self._queue.put(pair)
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="niceeval-viewer-diffs", daemon=True)
            self._thread.start()

    def _work(self) -> None:
        while True:
            pair = self._queue.get()
            with self._lock:
                job = self._jobs.get(pair)
            if job is None or not job.set_running_or_notify_cancel():
                continue
            interval = sys.getswitchinterval()
            sys.setswitchinterval(COMPUTING_SWITCH_S)
            try:
                job.set_result(self._store.diff(pair.base, pair.head, pair.options))
            except Exception as exc:  # the page that reads the job shows it (a ConfigError: why not comparable)
                job.set_exception(exc)
            finally:
                sys.setswitchinterval(interval)
