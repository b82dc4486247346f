"""A look into a store through its driver alone, for what `niceeval run` asks before SQLAlchemy.

Every run asks the store for the cases written in the viewer. Most projects have none, and importing SQLAlchemy
just to learn that costs more than the rest of a small run's start-up (and is the whole of what `--no-store`
would otherwise pay for the store). Only a plain SQLite file, or a PostgreSQL database at this niceeval's schema,
that answers cleanly is read here; anything else (another driver or options, an older schema, a damaged or busy
file, a server that does not answer) says "maybe", and the caller opens the store as always, so its errors and
migrations stay where they are.
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
    if url.startswith("postgresql+psycopg://"):
        return _postgresql_may_hold_cases(url)
    if not url.startswith("sqlite:///") or "?" in url:
        return True  # another driver, or SQLite with options: opened as always
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


def _postgresql_may_hold_cases(url: str) -> bool:
    from niceeval.store._driver import connect, parse_url, revision
    from niceeval.store._meta import SCHEMA_REVISION

    try:
        connection = connect(parse_url(url))
    except Exception:
        return True  # the store says what is wrong with it
    try:
        if revision(connection, "postgresql") != SCHEMA_REVISION:
            return True
        (found,) = connection.execute("SELECT EXISTS (SELECT 1 FROM ui_cases WHERE NOT deleted)").fetchone()
        return bool(found)
    except Exception:
        return True
    finally:
        connection.close()
