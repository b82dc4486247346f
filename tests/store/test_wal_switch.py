"""Opening one new SQLite file from several connections at once: the switch to WAL waits its turn (stores opened at
once: tests/store/test_open.py)."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing
from pathlib import Path

import pytest

from niceeval._core.sqlite_wal import use_wal

_AT_ONCE = 4


def _open_together(path: Path, setup: object) -> list[BaseException]:
    errors: list[BaseException] = []
    gate = threading.Barrier(_AT_ONCE, timeout=30)

    def go() -> None:
        try:
            connection = sqlite3.connect(path, timeout=10, isolation_level=None, check_same_thread=False)
            gate.wait()
            setup(connection)  # type: ignore[operator]
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("CREATE TABLE IF NOT EXISTS t (x)")
            connection.execute("COMMIT")
            assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            connection.close()
        except BaseException as exc:
            gate.abort()
            errors.append(exc)

    threads = [threading.Thread(target=go) for _ in range(_AT_ONCE)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_connections_creating_one_file_at_once_all_get_wal(tmp_path: Path) -> None:
    # A plain `PRAGMA journal_mode=WAL` failed here with "database is locked" in about 1 trial of 6, at once,
    # without waiting for the busy timeout.
    for trial in range(40):
        errors = _open_together(tmp_path / f"new-{trial}.db", lambda c: use_wal(c, 10.0))
        assert errors == [], f"trial {trial}: {errors}"


def test_a_lock_held_past_the_timeout_still_raises(tmp_path: Path) -> None:
    path = tmp_path / "held.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as holder:
        holder.execute("CREATE TABLE t (x)")
        holder.execute("BEGIN EXCLUSIVE")
        with closing(sqlite3.connect(path, timeout=0.05, isolation_level=None)) as other:
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                use_wal(other, 0.2)
            holder.execute("ROLLBACK")
            use_wal(other, 0.2)
            assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
