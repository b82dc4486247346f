"""A lease on a suite run: the one process writing it holds it, so a second `--resume` refuses instead of running
the missing eval runs twice.

No column and no heartbeat: the lease is a lock the operating system or the database drops when its process ends,
however it ends (a killed run's lease is free at once, so resuming it just works). SQLite: a POSIX lock on one
byte of an empty file beside the database (`results.db.leases`; the byte's offset is a hash of the id);
PostgreSQL: a session advisory lock (`pg_try_advisory_lock`) held on one connection. An in-memory SQLite store
has no other writer and takes none.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from typing import Any

from niceeval.store._driver import Target, connect


class LeaseHeld(Exception):
    """Another process holds the lease of the suite run."""


def held_message(suite_run_id: str) -> str:
    """What to tell the user whose run could not take the lease."""
    return (
        f"suite run {suite_run_id} is being written by another niceeval process right now (running or resuming it): "
        "let it finish, then `niceeval runs` shows whether anything is still missing."
    )


class Lease:
    """A held lease; `release()` gives it back (ending the process does too)."""

    def __init__(self, release: Any) -> None:
        self._release = release

    def __del__(self) -> None:
        self.release()  # dropped unreleased: nothing can use it any more (its connection closes, as a pool's would)

    def release(self) -> None:
        """Give the lease back (once; later calls do nothing)."""
        release, self._release = self._release, None
        if release is not None:
            with contextlib.suppress(Exception):
                release()


def take_lease(target: Target, suite_run_id: str) -> Lease:
    """The lease of suite run `suite_run_id` in the store at `target`; `LeaseHeld` when another process has it."""
    if target.kind == "postgresql":
        return _advisory_lock(target, suite_run_id)
    if target.in_memory or target.database is None:
        return Lease(None)
    database = Path(target.database)
    return _byte_lock(database.with_name(database.name + ".leases"), _key(suite_run_id) % 2**40)


def _key(suite_run_id: str) -> int:
    digest = hashlib.sha256(f"niceeval suite run {suite_run_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _byte_lock(path: Path, offset: int) -> Lease:
    import fcntl

    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.lockf(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
    except OSError:  # EACCES or EAGAIN: another process holds it
        os.close(descriptor)
        raise LeaseHeld(str(path)) from None
    return Lease(lambda: os.close(descriptor))  # closing the file drops its locks


def _advisory_lock(target: Target, suite_run_id: str) -> Lease:
    key = _key(suite_run_id)
    conn = connect(target)  # its own connection: the lock lives as long as it does
    try:
        conn.autocommit = True
        taken = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]
    except Exception:
        conn.close()
        raise
    if not taken:
        conn.close()
        raise LeaseHeld(f"advisory lock {key}")

    def release() -> None:
        try:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        finally:
            conn.close()

    return Lease(release)
