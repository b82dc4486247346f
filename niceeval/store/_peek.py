"""A look into a SQLite store with the standard library alone, for what `niceeval run` asks before it needs SQLAlchemy.

Every run asks the store for the cases written in the viewer. Most projects have none, and importing SQLAlchemy
just to learn that costs more than the rest of a small run's start-up (and is the whole of what `--no-store`
would otherwise pay for the store). Only a plain SQLite file that answers cleanly is read here; anything else (a
URL, PostgreSQL, an older schema, a damaged or busy file) says "maybe", and the caller opens the store as always,
so its errors and migrations stay where they are.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

_ANY_CASE = "SELECT EXISTS (SELECT 1 FROM ui_cases WHERE deleted = 0)"


def may_hold_cases(location: str, root: Path) -> bool:
    """False only when `location` is a SQLite file, relative to `root`, that surely holds no live viewer case."""
    if "://" in location:
        return True
    path = root / location
    if not path.is_file():
        return True  # the store decides what a missing or odd path means
    try:
        connection = sqlite3.connect(path, timeout=1.0)
        try:
            (found,) = connection.execute(_ANY_CASE).fetchone()
        finally:
            connection.close()
    except (sqlite3.Error, TypeError, ValueError):
        return True
    return bool(found)
