"""A look into a SQLite store with the standard library alone, for what `niceeval run` asks before SQLAlchemy.

Every run asks the store for the cases written in the viewer. Most projects have none, and importing SQLAlchemy
just to learn that costs more than the rest of a small run's start-up (and is the whole of what `--no-store`
would otherwise pay for the store). Only a plain SQLite file that answers cleanly is read here; anything else (a
URL, PostgreSQL, an older schema, a damaged or busy file) says "maybe", and the caller opens the store as always,
so its errors and migrations stay where they are.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from niceeval.store._url import StoreUrlError, resolve_url

_ANY_CASE = "SELECT EXISTS (SELECT 1 FROM ui_cases WHERE deleted = 0)"


def may_hold_cases(location: str, root: Path) -> bool:
    """False only when `location` (a path below `root` or a `sqlite:///` URL) is a SQLite file that surely holds
    no live viewer case."""
    try:
        url = resolve_url(location, root)
    except StoreUrlError:
        return True  # the store says what is wrong with it
    if not url.startswith("sqlite:///") or "?" in url:
        return True  # PostgreSQL, or SQLite with options: opened as always
    path = Path(url.removeprefix("sqlite:///"))
    if not path.is_absolute() or not path.is_file():
        return True
    try:
        connection = sqlite3.connect(path, timeout=1.0)
        try:
            (found,) = connection.execute(_ANY_CASE).fetchone()
        finally:
            connection.close()
    except (sqlite3.Error, TypeError, ValueError):
        return True
    return bool(found)
