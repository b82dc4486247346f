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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import Engine

_HEADER = b"SQLite format 3\x00"
_FRESH_S = 10.0
"""An empty store file younger than this may be another process's new store, about to get its schema."""
_SECOND_LOOK_S = 0.1
"""How long after a first look that found a problem the file is looked at again (only a damaged store waits)."""
_DAMAGE = ("malformed", "not a database", "file is encrypted", "disk i/o error", "database corrupt")


def _move_away(path: str | Path) -> str:
    return (
        f"move it away (mv {path} {path}.damaged: the next run starts a new store there), pass --store PATH, "
        "or run with --no-store; "
        f"`niceeval store check --store {path}` says what can still be read from it"
    )


def check_sqlite_file(path: Path) -> str | None:
    """What is wrong with the SQLite file at `path`, judged from its header and size (None: nothing seen).

    A problem counts only when a second look, a moment later, sees the same file with it: another process writing
    the store (a shard that made it and is ending, its checkpoint growing the file and deleting the log) changes
    the file between this process's `stat`, its look for a log and its read of the header, so one look can pair a
    stale size with a newer header. Damage stays as it is.
    """
    first = _look(path)
    if first.problem is None:
        return None
    time.sleep(_SECOND_LOOK_S)
    second = _look(path)
    return second.problem if second.file == first.file else None


@dataclass(frozen=True, slots=True)
class _Look:
    problem: str | None
    file: tuple[int, int, int] | None
    """The file's inode, size and modification time (ns) when looked at: what a writer at work changes."""


def _look(path: Path) -> _Look:
    if not path.is_file():
        return _Look(None, None)
    stat = path.stat()
    size = stat.st_size
    seen = (stat.st_ino, size, stat.st_mtime_ns)
    if size == 0 and _being_created(path, stat.st_mtime):
        return _Look(None, seen)
    if size == 0:
        return _Look(
            f"the results store {path} is an empty file (0 bytes), not a results store: {_move_away(path)}.", seen
        )
    if _in_use(path):  # another process may be writing it (a checkpoint writes page 1 before the pages after it):
        return _Look(None, seen)  # its header proves nothing now, and damage still shows when a page is read
    with path.open("rb") as file:
        header = file.read(100)
    return _Look(_header_problem(path, header, size), seen)


def _header_problem(path: Path, header: bytes, size: int) -> str | None:
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
