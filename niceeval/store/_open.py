"""Opening a store: the URL (or path), the engine per backend, and the schema brought to this niceeval's head.

A fresh database gets the whole schema in one transaction (`create_all`, then the Alembic revision stamped);
an older one is upgraded by the Alembic migrations shipped in `_migrations/`; one written by a newer niceeval is
refused with the version that wrote it. Two processes opening one fresh store at once serialise on a lock
(SQLite: `BEGIN IMMEDIATE`; PostgreSQL: a transaction-scoped advisory lock), so the schema is made once.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Column, Connection, Engine, MetaData, String, Table, create_engine, event, inspect, select
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, SQLAlchemyError

from niceeval._core.sqlite_wal import use_wal
from niceeval.store import _url
from niceeval.store._errors import StoreError as StoreError
from niceeval.store._schema import SCHEMA_REVISION, metadata, store_info

_BUSY_S = 60.0
_MIGRATIONS = Path(__file__).resolve().parent / "_migrations"
_ADVISORY_LOCK = 0x6E6963_6565_76  # "niceev": one key for every niceeval schema migration
_VERSION_TABLE = Table(
    "alembic_version", MetaData(), Column("version_num", String(32), primary_key=True)
)  # Alembic's own table, read without importing Alembic (opening a current store stays cheap)


def resolve_url(value: str, root: Path) -> str:
    """A store URL from what the user wrote (a path, `sqlite:///...`, `postgresql://...`); `StoreError` otherwise.

    A bare path is a SQLite file below `root`; `postgresql://` and `postgres://` URLs use the psycopg 3 driver.
    """
    try:
        return _url.resolve_url(value, root)
    except _url.StoreUrlError as exc:
        raise StoreError(str(exc)) from None


def masked(url: str) -> str:
    """The URL with its password replaced by `***`, for messages and listings."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return _url.masked(url)


def _scrub(text: str, url: URL) -> str:
    return text.replace(url.password, "***") if url.password else text


def _sqlite_engine(url: URL) -> Engine:
    from niceeval.store._damage import check_sqlite_file

    database = url.database or ""
    if database and database != ":memory:":
        problem = check_sqlite_file(Path(database))
        if problem is not None:
            raise StoreError(problem)
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"timeout": _BUSY_S})

    @event.listens_for(engine, "connect")
    def _connect(dbapi: sqlite3.Connection, _record: object) -> None:
        dbapi.isolation_level = None  # niceeval emits BEGIN itself (below): pysqlite's implicit one is unreliable
        cursor = dbapi.cursor()
        use_wal(dbapi, _BUSY_S)  # readers never block the writer
        cursor.execute("PRAGMA synchronous=NORMAL")  # a commit survives a killed process (not a power loss)
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        # Writers take the lock up front: a deferred transaction upgrading to a write can fail at once with
        # "database is locked" instead of waiting for the other writer.
        immediate = conn.get_execution_options().get("niceeval_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def create_store_engine(url_text: str) -> Engine:
    """An engine for `url_text`, connected once and its schema migrated; `StoreError` says what is wrong."""
    try:
        url = make_url(url_text)
    except ArgumentError:
        raise StoreError(
            f"{masked(url_text)} is not a store URL; write sqlite:///path/results.db, postgresql://user@host/db, "
            "or a file path."
        ) from None
    try:
        if url.get_backend_name() == "sqlite":
            engine = _sqlite_engine(url)
        else:
            engine = create_engine(url, pool_pre_ping=True, connect_args=_connect_args(url))
    except NoSuchModuleError:
        kind = url.drivername
        raise StoreError(f"{masked(url_text)}: unknown database kind {kind!r}; use sqlite or postgresql.") from None
    except ModuleNotFoundError as exc:
        hint = " Install it with: pip install 'niceeval[postgres]'." if "psycopg" in str(exc) else ""
        raise StoreError(f"the store {masked(url_text)} needs the {exc.name} package.{hint}") from None
    try:
        migrate(engine)
    except StoreError:
        engine.dispose()
        raise
    except SQLAlchemyError as exc:
        engine.dispose()
        raise StoreError(_explain(exc, url)) from None
    return engine


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A connection of `engine` in a write transaction (SQLite: begun with `BEGIN IMMEDIATE`), committed at the end."""
    with engine.connect().execution_options(niceeval_write=True) as conn, conn.begin():
        yield conn


def _connect_args(url: URL) -> dict[str, Any]:
    return {"connect_timeout": 10} if url.get_backend_name() == "postgresql" else {}


def _explain(exc: SQLAlchemyError, url: URL) -> str:
    shown = url.render_as_string(hide_password=True)
    from niceeval.store._damage import damage_message

    original = exc.orig if isinstance(exc, DBAPIError) else exc
    detail = _scrub(str(original).strip().splitlines()[0] if str(original).strip() else type(original).__name__, url)
    damaged = damage_message(exc, url.database or shown) if isinstance(original, sqlite3.DatabaseError) else None
    if damaged is not None:
        return damaged
    return f"cannot open the results store {shown}: {detail}. Check the URL, or pass --no-store to run without it."


def _revision(conn: Connection) -> str | None:
    if not inspect(conn).has_table("alembic_version"):
        return None
    return conn.execute(select(_VERSION_TABLE.c.version_num)).scalar()


def migrate(engine: Engine) -> None:
    """Bring the schema to this niceeval's revision (no-op when it is there already)."""
    with engine.connect() as conn:
        if _revision(conn) == SCHEMA_REVISION:
            return
    with engine.connect().execution_options(niceeval_write=True) as conn, conn.begin():
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_ADVISORY_LOCK})")
        current = _revision(conn)
        if current == SCHEMA_REVISION:
            return  # another process migrated it while this one waited for the lock
        if current is None and not inspect(conn).get_table_names():
            metadata.create_all(conn)
            _VERSION_TABLE.create(conn)
            conn.execute(_VERSION_TABLE.insert().values(version_num=SCHEMA_REVISION))
        elif current is None or current in _known_revisions():
            upgrade_with_alembic(conn)
        else:
            raise StoreError(_newer(conn, engine, current))
        _record_version(conn)


def _record_version(conn: Connection) -> None:
    from niceeval.store._meta import niceeval_version

    conn.execute(store_info.delete().where(store_info.c.key == "niceeval_version"))
    conn.execute(store_info.insert().values(key="niceeval_version", value=niceeval_version()))


def _newer(conn: Connection, engine: Engine, revision: str) -> str:
    from niceeval.store._meta import niceeval_version

    written_by = "a newer niceeval"
    if inspect(conn).has_table("store_info"):
        version = conn.execute(select(store_info.c.value).where(store_info.c.key == "niceeval_version")).scalar()
        written_by = f"niceeval {version}" if version else written_by
    return (
        f"the results store {engine.url.render_as_string(hide_password=True)} was written by {written_by} "
        f"(schema {revision}); this is niceeval {niceeval_version()} (schema {SCHEMA_REVISION}). Upgrade niceeval "
        "(pip install -U niceeval), or pass another --store."
    )


def _known_revisions() -> set[str]:
    """Each migration's revision: its file's number (`0016_tallies.py` is `0016`) or whole stem (`0017_pgindex`)."""
    return {name for path in (_MIGRATIONS / "versions").glob("*.py") for name in (path.stem, path.stem.split("_")[0])}


def upgrade_with_alembic(conn: Connection) -> None:
    """Run the shipped Alembic migrations up to head on `conn` (inside its transaction)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    config.attributes["connection"] = conn
    command.upgrade(config, "head")
