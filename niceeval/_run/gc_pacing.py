"""Python's cyclic garbage collector, paced for a suite run.

A suite allocates many short-lived objects per eval (SDK requests and responses, events, the eval's context), and
the collector's default pace (a young-generation pass every 700 net allocations) spent a good share of a judged
suite's CPU time walking them. For the suite's event loop the young-generation threshold is raised to 100,000 and
what start-up loaded (modules, classes, the discovered evals) is frozen out of every collection: it lives as long as
the process. The young count is net (a freed object takes one off) but starts again from zero after each pass, so
a lower threshold (10,000) made passes of its own in a big cheap suite: each pass moved the runs in flight (the
store's pending batch, the reports' held runs) out of the young generation, and their frees no longer counted
against it. Garbage waits a little longer, so peak memory grows a little; the old pace is put back when the suite
ends. When the process ends with the suite (the `niceeval` command), start-up stays frozen: the collection made
before exit then walks what the suite made, not every module again. The figures: bench/NOTES.md, "Garbage
collection".
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 100_000


@contextmanager
def paused_collection() -> Iterator[None]:
    """No collection while a command starts (imports, discovery, planning, a `paced_collection` block excepted).

    Nearly every object start-up makes lives until the process ends, so the collector's many young-generation
    passes over them found nothing to free.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def paced_collection(*, process_ends: bool = False) -> Iterator[None]:
    """Fewer, cheaper garbage collections while the block runs (a suite's event loop), also inside a
    `paused_collection` block; `process_ends`: the process exits after it (start-up stays frozen)."""
    old = gc.get_threshold()
    enabled = gc.isenabled()
    gc.freeze()
    gc.set_threshold(max(old[0], YOUNG_THRESHOLD), *old[1:])
    gc.enable()
    try:
        yield
    finally:
        gc.set_threshold(*old)
        if not enabled:
            gc.disable()
        if not process_ends:  # in-process callers (tests, scripts) get every object back in their collections
            gc.unfreeze()
