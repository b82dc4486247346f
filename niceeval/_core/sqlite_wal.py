"""SQLite's write-ahead log, switched on safely while other connections open the same new file."""

from __future__ import annotations

import sqlite3
import time

_RETRY_S = 0.01


def use_wal(connection: sqlite3.Connection, timeout: float) -> None:
    """Put the database of `connection` in WAL mode (a no-op once it is: the mode is kept in the file).

    Switching needs the file to itself, and SQLite reports "database is locked" at once, without waiting for the
    busy timeout, while another connection opens or creates the same file: the switch is tried again for up to
    `timeout` seconds (then the error is raised).
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(_RETRY_S)
