"""Diffs kept for reuse: `Store.diff` of two closed suite runs is computed once per set of options and read back
after, by `niceeval diff` and the viewer's compare page alike.

A kept diff names the close stamps (`suite_runs.finished_at`) of both runs and the niceeval that computed it; it is
read back only while all three are unchanged. Reopening a run (a resume, a late shard) clears its stamp and closing
it again sets a new one, so a changed run is compared afresh; a run still `running` is never kept. Deleting a run
deletes its kept diffs (a foreign key); `niceeval gc` forgets them all (`forget_all`), since a run it deletes may
hold the records another run carried. Keeping is an optimisation: a store that refuses the write (a read-only file,
a writer holding the lock past the busy timeout) still answers with the diff just computed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from pydantic import ValidationError
from sqlalchemy import Connection, Engine, delete, insert, select
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from niceeval.store._diff import DiffOptions
from niceeval.store._meta import niceeval_version
from niceeval.store._models import RunDiff
from niceeval.store._schema import kept_diffs, suite_runs


@dataclass(frozen=True, kw_only=True)
class PairKey:
    """What a kept diff is found by and checked against: the two runs, the options' digest, both close stamps."""

    base: str
    head: str
    options: str
    base_closed: str
    head_closed: str


METHOD = 2
"""How a diff is computed, in the digest beside its options: raised when a change to its statistics changes what a
kept diff would hold, so a diff kept before is computed again where the version string of a source checkout does
not move (2: McNemar's interval is Newcombe's; a paired t interval with no width is the square and add of the two
sides' intervals)."""


def options_digest(options: DiffOptions) -> str:
    """The digest of every option that changes a diff (all of them: the threshold lists scores, the rule judges)
    and of the `METHOD` that computes it."""
    keyed = {**asdict(options), "method": METHOD}
    return hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()


def pair_key(conn: Connection, base: str, head: str, options: DiffOptions) -> PairKey | None:
    """The key of `base` and `head` as they stand now; None while either is not closed (its diff may change)."""
    rows = conn.execute(
        select(suite_runs.c.id, suite_runs.c.status, suite_runs.c.finished_at).where(suite_runs.c.id.in_([base, head]))
    ).all()
    closed = {row.id: row.finished_at.isoformat() for row in rows if row.status != "running" and row.finished_at}
    if base not in closed or head not in closed:
        return None
    return PairKey(
        base=base, head=head, options=options_digest(options), base_closed=closed[base], head_closed=closed[head]
    )


def recall(conn: Connection, key: PairKey) -> RunDiff | None:
    """The diff kept under `key`, when one was computed at these close stamps by this niceeval (and still parses)."""
    kept = conn.execute(
        select(kept_diffs.c.diff).where(
            kept_diffs.c.base == key.base,
            kept_diffs.c.head == key.head,
            kept_diffs.c.options == key.options,
            kept_diffs.c.base_closed == key.base_closed,
            kept_diffs.c.head_closed == key.head_closed,
            kept_diffs.c.niceeval_version == niceeval_version(),
        )
    ).scalar()
    if kept is None:
        return None
    try:
        return RunDiff.model_validate_json(kept)
    except ValidationError:  # a row garbled outside niceeval: computed again, and kept anew
        return None


def keep(engine: Engine, key: PairKey, found: RunDiff) -> None:
    """Keep `found` under `key`, replacing what an earlier close of either run or another niceeval kept."""
    row = {
        "base": key.base, "head": key.head, "options": key.options, "base_closed": key.base_closed,
        "head_closed": key.head_closed, "niceeval_version": niceeval_version(), "diff": found.model_dump_json(),
    }  # fmt: skip
    same_pair = (kept_diffs.c.base == key.base, kept_diffs.c.head == key.head, kept_diffs.c.options == key.options)
    try:
        with engine.begin() as conn:
            conn.execute(delete(kept_diffs).where(*same_pair))
            conn.execute(insert(kept_diffs).values(**row))
    except (OperationalError, IntegrityError, ProgrammingError):
        # read-only, locked past the busy timeout, or kept meanwhile by another process: the diff stands as computed
        return


def forget_all(conn: Connection) -> None:
    """Forget every kept diff (`niceeval gc`: the runs it deleted may hold records a kept run carried)."""
    conn.execute(delete(kept_diffs))
