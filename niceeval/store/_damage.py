"""A damaged store is said to be damaged: which file, and what to do, never a traceback or a silent new store.

Opening a SQLite store checks its file cheaply (its 100-byte header and its size, no page read): an empty file, a
file that is not SQLite, and a file cut short are refused by name. Damage deeper in (garbled pages) shows when a
page is read; that error is turned into the same kind of message. `niceeval store check` reads every page
(`PRAGMA integrity_check`) and says which suite runs can still be read.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import Engine

_HEADER = b"SQLite format 3\x00"
_FRESH_S = 10.0
"""An empty store file younger than this may be another process's new store, about to get its schema."""
_DAMAGE = ("malformed", "not a database", "file is encrypted", "disk i/o error", "database corrupt")


def _move_away(path: str | Path) -> str:
    return (
        f"move it away (mv {path} {path}.damaged: the next run starts a new store there), pass --store PATH, "
        "or run with --no-store; "
        f"`niceeval store check --store {path}` says what can still be read from it"
    )


def check_sqlite_file(path: Path) -> str | None:
    """What is wrong with the SQLite file at `path`, judged from its header and size (None: nothing seen)."""
    if not path.is_file():
        return None
    stat = path.stat()
    size = stat.st_size
    if size == 0 and _being_created(path, stat.st_mtime):
        return None
    if size == 0:
        return f"the results store {path} is an empty file (0 bytes), not a results store: {_move_away(path)}."
    if _in_use(path):  # another process may be writing it (a checkpoint writes page 1 before the pages after it):
        return None  # its header proves nothing now, and damage still shows when a page is read
    with path.open("rb") as file:
        header = file.read(100)
    if not header.startswith(_HEADER):
        return f"the results store {path} is not a SQLite database (damaged, or another file): {_move_away(path)}."
    if len(header) < 100:
        return f"the results store {path} is cut short ({size} bytes): {_move_away(path)}."
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    counted = header[24:28] == header[92:96]  # the page count is valid only when these agree
    if counted and pages * page_size > size:
        return (
            f"the results store {path} is cut short ({size} of {pages * page_size} bytes; a full disk or an "
            f"interrupted copy): {_move_away(path)}."
        )
    return None


def _in_use(path: Path) -> bool:
    """A write-ahead log or rollback journal beside the file: a connection has it open, or one was cut off."""
    return any(path.with_name(path.name + suffix).exists() for suffix in ("-wal", "-journal"))


def _being_created(path: Path, modified: float) -> bool:
    """An empty file another process is making into a store right now (SQLite creates it empty, then writes)."""
    return _in_use(path) or time.time() - modified < _FRESH_S


def damage_message(exc: BaseException, where: str) -> str | None:
    """A message naming the damaged store (`where`: its file) when `exc` says its file is damaged, else None."""
    original: object = exc
    if "sqlalchemy.exc" in sys.modules:  # raised through SQLAlchemy: its driver's own error is inside
        from sqlalchemy.exc import DBAPIError

        original = exc.orig if isinstance(exc, DBAPIError) else exc
    if not isinstance(original, sqlite3.DatabaseError):
        return None
    detail = str(original).strip().splitlines()[0] if str(original).strip() else type(original).__name__
    if not any(word in detail.lower() for word in _DAMAGE):
        return None
    return f"the results store {where} is damaged ({detail}): {_move_away(where)}."


def integrity_problems(engine: Engine) -> list[str]:
    """Every problem `PRAGMA integrity_check` (SQLite) finds, reading every page; [] when the store is sound."""
    from sqlalchemy import text

    if engine.dialect.name != "sqlite":
        with engine.connect() as conn:
            conn.execute(text("SELECT count(*) FROM suite_runs")).scalar()
        return []
    with engine.connect() as conn:
        rows = [str(row[0]) for row in conn.exec_driver_sql("PRAGMA integrity_check(50)")]
    return [] if rows == ["ok"] else rows
