"""What a store may be written as: a SQLite file path, `sqlite:///...`, or `postgresql://...`; nothing else.

Every other form is refused before anything is created, with the form the user most likely meant: a URL missing
its `//` (`sqlite:/tmp/x.db` would otherwise become a folder named `sqlite:`), a database kind niceeval does not
store in (`mysql://`), a new file outside the project whose folder does not exist (no folders created from `/`),
or a new file not named like a database (`--store README.md` would otherwise become one).
"""

from __future__ import annotations

import re
from pathlib import Path

from niceeval._core.errors import NiceevalError

DEFAULT_PATH = Path(".niceeval") / "results.db"
"""The default store, relative to the project root: a SQLite file."""

DATABASE_SUFFIXES = (".db", ".sqlite", ".sqlite3", ".db3")
"""The names a new SQLite store may have (an existing file is opened whatever its name)."""

_FORMS = "a file path (results.db), sqlite:////absolute/path/results.db, or postgresql://user@host/db"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):(.*)$", re.DOTALL)


class StoreUrlError(NiceevalError):
    """A store URL that is not one of the documented forms (a `StoreError` to callers)."""


def masked(location: str) -> str:
    """A store location with the password of its URL (if any) replaced by `***`, for messages."""
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", location)


def resolve_url(value: str, root: Path) -> str:
    """A SQLAlchemy URL from what the user wrote; `StoreUrlError` names the right form for anything else.

    A bare path, and the path of a `sqlite:///relative` URL, are below `root`. `postgresql://` and `postgres://`
    use the psycopg 3 driver.
    """
    text = value.strip()
    if not text:
        raise StoreUrlError(f"the store is empty; write {_FORMS}, or pass --no-store.")
    if "://" in text:
        scheme, rest = text.split("://", 1)
        return _from_url(text, scheme, rest, root)
    looks_like_url = _SCHEME.match(text)
    if looks_like_url:
        raise StoreUrlError(_missing_slashes(text, looks_like_url.group(1), looks_like_url.group(2)))
    return f"sqlite:///{sqlite_path(text, root)}"


def _from_url(text: str, scheme: str, rest: str, root: Path) -> str:
    kind, _, driver = scheme.lower().partition("+")
    if kind in ("postgresql", "postgres"):
        return f"postgresql+{driver or 'psycopg'}://{rest}"
    if kind != "sqlite":
        shown = masked(text)
        raise StoreUrlError(
            f"{shown}: niceeval does not store results in {kind!r} databases, only in SQLite and PostgreSQL; "
            f"write {_FORMS}."
        )
    database, query = (rest.split("?", 1) + [""])[:2]
    if database in ("", "/", "/:memory:"):
        return text  # an in-memory database: nothing on disk
    if not database.startswith("/"):
        raise StoreUrlError(
            f"{text}: a SQLite URL has three slashes before a relative path and four before an absolute one; "
            f"write sqlite:///{database} (below the project) or sqlite:////{database} (from /)."
        )
    path = sqlite_path(database[1:], root)
    return f"{scheme}:///{path}" + (f"?{query}" if query else "")


def _missing_slashes(text: str, scheme: str, rest: str) -> str:
    kind = scheme.lower().partition("+")[0]
    if kind == "sqlite":
        path = rest.lstrip("/")
        absolute = rest.startswith("/")
        return f"{text} is not a store URL (a SQLite URL has `///`): write " + (
            f"sqlite:////{path} or just /{path}." if absolute else f"sqlite:///{path} or just {path}."
        )
    if kind in ("postgresql", "postgres"):
        return f"{text} is not a store URL: write postgresql://user@host/db (with `//`)."
    return f"{text} is not a store: write {_FORMS} (a file path with a colon in its name: ./{text})."


def sqlite_path(text: str, root: Path) -> Path:
    """The absolute path of a SQLite store written as `text`, checked: see the module docstring."""
    path = Path(text).expanduser()
    path = path if path.is_absolute() else root / path
    if path.is_dir():
        raise StoreUrlError(f"the store {text} is a folder: name a file in it, e.g. {path / 'results.db'}.")
    if path.exists():
        return path
    if path.suffix.lower() not in DATABASE_SUFFIXES:
        raise StoreUrlError(
            f"there is no store at {text}, and a new store is a file named *.db, *.sqlite or *.sqlite3 (so a mistyped "
            f"path never becomes a database): write e.g. {path.with_suffix('.db') if path.suffix else f'{text}.db'}."
        )
    folder = path.parent
    if not folder.is_dir() and not _inside(folder, root):
        raise StoreUrlError(
            f"the folder {folder} of the store {text} does not exist; create it first (niceeval creates folders "
            f"for a store only inside the project, {root})."
        )
    return path


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root.resolve())
    except OSError:
        return False
