"""A lease on a suite run: the one process writing it holds it, so a second `--resume` refuses instead of running
the missing eval runs twice.

No column and no heartbeat: the lease is a lock the operating system or the database drops when its process ends,
however it ends (a killed run's lease is free at once, so resuming it just works). SQLite: a lock on one byte of an
empty file beside the database (`results.db.leases`; the byte's offset is a hash of the id), an open file's lock
where the system has them (Linux: closing another descriptor of the file, as a probe does, keeps it), else a POSIX
lock; PostgreSQL: a session advisory lock (`pg_try_advisory_lock`) held on one connection. An in-memory SQLite store
has no other writer and takes none. `writer_gone` tells, without taking the lease, that no process holds it: a
suite run still `running` then has no writer left (`niceeval runs` shows it as interrupted).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
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


def writer_gone(target: Target, suite_run_id: str) -> bool:
    """Whether no process holds the lease of suite run `suite_run_id` now, told without taking it; False when it
    cannot be told (a system without open files' locks, a store that does not answer)."""
    if target.kind == "postgresql":
        return _no_advisory_lock(target, _key(suite_run_id))
    if target.in_memory or target.database is None:
        return False
    database = Path(target.database)
    return _byte_free(database.with_name(database.name + ".leases"), _key(suite_run_id) % 2**40)


def _key(suite_run_id: str) -> int:
    digest = hashlib.sha256(f"niceeval suite run {suite_run_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


_FLOCK = "hhqqi4x"
"""Linux's `struct flock`: type, whence, start, length, pid (0 for an open file's lock), padding."""


def _byte_lock(path: Path, offset: int) -> Lease:
    import fcntl

    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if hasattr(fcntl, "F_OFD_SETLK"):
            fcntl.fcntl(descriptor, fcntl.F_OFD_SETLK, struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0))
        else:
            fcntl.lockf(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
    except OSError:  # EACCES or EAGAIN: another process holds it
        os.close(descriptor)
        raise LeaseHeld(str(path)) from None
    return Lease(lambda: os.close(descriptor))  # closing the file drops its locks


def _byte_free(path: Path, offset: int) -> bool:
    import fcntl

    if not hasattr(fcntl, "F_OFD_GETLK"):  # a POSIX lock is the process's: closing this probe would drop its own
        return False
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return True  # no writer ever took a lease beside this store
    except OSError:
        return False
    try:
        probe = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0)
        found = fcntl.fcntl(descriptor, fcntl.F_OFD_GETLK, probe)
        return bool(struct.unpack(_FLOCK, found)[0] == fcntl.F_UNLCK)
    except OSError:
        return False
    finally:
        os.close(descriptor)


def _no_advisory_lock(target: Target, key: int) -> bool:
    """PostgreSQL lists a 64-bit advisory key as its two halves, without the probe taking the lock."""
    query = (
        "SELECT NOT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 "
        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
        "AND classid::bigint = %s AND objid::bigint = %s)"
    )
    unsigned = key % 2**64
    try:
        conn = connect(target)
    except Exception:
        return False
    try:
        return bool(conn.execute(query, (unsigned >> 32, unsigned & 0xFFFFFFFF)).fetchone()[0])
    except Exception:
        return False
    finally:
        conn.close()


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
