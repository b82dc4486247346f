"""The store at the level of its DB-API driver (stdlib `sqlite3`, `psycopg` 3), without SQLAlchemy.

SQLAlchemy and Alembic own the schema, its migrations and every read; the writes a suite run makes
(`_statements.py`) go through the driver itself, with SQL text made once per table and dialect: importing
SQLAlchemy and its per-row parameter processing cost a small run more than the rest of its start-up, and a big
run's writes take CPU from its event loop. This module parses a store URL the way SQLAlchemy does, opens
a connection the way `_open` configures SQLAlchemy's (SQLite: WAL, `synchronous=NORMAL`, foreign keys, writers
taking the lock with `BEGIN IMMEDIATE`, a 60 s busy timeout; PostgreSQL: a 10 s connect timeout), reads the
schema revision, and runs a write transaction (or, on SQLite, begins one only if no other writer holds the lock:
`Busy`). `Session` is a connection in a transaction with its dialect's SQL: the shards' bookkeeping makes one from
a SQLAlchemy connection, the recorder's `WriteConnection` from its own.
"""

from __future__ import annotations

import itertools
import re
import sqlite3
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, cast
from urllib.parse import parse_qsl, quote, quote_plus, unquote

from niceeval._core.sqlite_wal import use_wal

if TYPE_CHECKING:
    from sqlalchemy import Connection

Kind = Literal["sqlite", "postgresql"]

STREAM_ROWS = 2000
"""Rows a PostgreSQL server-side cursor hands over per round trip (`Session.stream`)."""
_STREAMS = itertools.count()

# SQLAlchemy's own URL pattern (sqlalchemy/engine/url.py), so both read a URL alike.
_URL = re.compile(
    r"""(?P<name>[\w\+]+)://
    (?:(?P<username>[^:/]*)(?::(?P<password>[^@]*))?@)?
    (?:(?:\[(?P<ipv6host>[^/\?]+)\]|(?P<ipv4host>[^/:\?]+))?(?::(?P<port>[^/\?]*))?)?
    (?:/(?P<database>[^\?]*))?
    (?:\?(?P<query>.*))?""",
    re.X | re.S,
)


class UnsupportedUrl(ValueError):
    """A store URL this module does not open itself (another driver, options it does not know): `Store` does."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Target:
    """A store URL, parsed: what to connect to."""

    kind: Kind
    driver: str
    username: str | None = None
    password: str | None = None
    host: str | None = None
    port: int | None = None
    database: str | None = None
    """SQLite: the file's path (None or `:memory:`: in memory); PostgreSQL: the database's name."""
    query: dict[str, str] = field(default_factory=dict)

    @property
    def shown(self) -> str:
        """The URL as SQLAlchemy renders it, its password masked."""
        text = f"{self.kind}+{self.driver}://" if self.kind == "postgresql" else "sqlite://"
        if self.username is not None:
            text += quote(self.username, safe=" +") + (":***" if self.password is not None else "") + "@"
        if self.host is not None:
            text += f"[{self.host}]" if ":" in self.host else self.host
        if self.port is not None:
            text += f":{self.port}"
        if self.database is not None:
            text += "/" + quote(self.database, safe=" +/")
        if self.query:
            text += "?" + "&".join(f"{quote_plus(k)}={quote_plus(v)}" for k, v in sorted(self.query.items()))
        return text

    @property
    def own_driver(self) -> bool:
        """Whether `connect` opens it as `Store` would (the default driver, no driver options to honour)."""
        if self.kind == "sqlite":
            return self.driver == "pysqlite" and not self.query
        return self.driver == "psycopg"

    @property
    def in_memory(self) -> bool:
        return self.kind == "sqlite" and self.database in (None, "", ":memory:")


def parse_url(url: str) -> Target:
    """The target of a resolved store URL (`sqlite:///path` or `postgresql+psycopg://...`)."""
    match = _URL.fullmatch(url.strip())
    if match is None:
        raise UnsupportedUrl(url)
    parts = match.groupdict()
    name = parts["name"]
    kind, _, driver = name.partition("+")
    query = dict(parse_qsl(parts["query"] or "", keep_blank_values=True))
    if len(query) != len(parse_qsl(parts["query"] or "", keep_blank_values=True)):
        raise UnsupportedUrl(url)  # a repeated key (several hosts): SQLAlchemy's own handling
    if kind == "sqlite":
        return Target(kind="sqlite", driver=driver or "pysqlite", database=parts["database"] or None, query=query)
    if kind == "postgresql" and "," not in (parts["ipv4host"] or ""):
        port = parts["port"]
        return Target(
            kind="postgresql",
            driver=driver or "psycopg",
            username=unquote(parts["username"]) if parts["username"] is not None else None,
            password=unquote(parts["password"]) if parts["password"] is not None else None,
            host=parts["ipv6host"] or parts["ipv4host"],
            port=int(port) if port else None,
            database=unquote(parts["database"]) if parts["database"] is not None else None,
            query=query,
        )
    raise UnsupportedUrl(url)


def connect(target: Target) -> Any:
    """A new DB-API connection to `target`, configured as `Store`'s engine configures its connections."""
    if not target.own_driver and target.kind == "postgresql":
        raise UnsupportedUrl(f"{target.shown}: niceeval writes to PostgreSQL through psycopg 3 (postgresql://...)")
    if target.kind == "sqlite":
        _bind_plainly()
        connection = sqlite3.connect(
            target.database or ":memory:", timeout=60.0, isolation_level=None, check_same_thread=False
        )
        try:
            use_wal(connection, 60.0)  # readers never block the writer
            connection.execute("PRAGMA synchronous=NORMAL")  # a commit survives a killed process (not a power loss)
            connection.execute("PRAGMA foreign_keys=ON")
            # The recorder only appends: SQLite's default page cache (2 MB) holds pages it never reads again (the
            # operating system caches the file anyway); a smaller one lowers a suite's peak memory, not its speed.
            connection.execute("PRAGMA cache_size=-512")
        except BaseException:
            connection.close()  # a damaged or locked file: not left to the collector
            raise
        return connection
    import psycopg

    return psycopg.connect(**postgresql_options(target))


def postgresql_options(target: Target) -> dict[str, Any]:
    """The keyword arguments psycopg connects to `target` with (a 10 s connect timeout, the URL's options)."""
    options: dict[str, Any] = {"connect_timeout": 10}
    names = {"username": "user", "database": "dbname"}
    for name in ("host", "port", "username", "password", "database"):
        value = getattr(target, name)
        if value is not None:
            options[names.get(name, name)] = value
    options.update(target.query)
    return options


_SECONDS: dict[tuple[int, int, int, int, int, int], str] = {}
""""YYYY-MM-DD HH:MM:SS" by wall-clock fields: a run's events fall in a few seconds, and `isoformat` formats
through C's `printf`, which costs more than this lookup (every run stamps its events)."""


def _second(when: datetime) -> str:
    """`when`'s wall-clock date and time to the second, "YYYY-MM-DD HH:MM:SS"."""
    second = (when.year, when.month, when.day, when.hour, when.minute, when.second)
    head = _SECONDS.get(second)
    if head is None:
        if len(_SECONDS) >= 4096:
            _SECONDS.clear()
        head = _SECONDS[second] = when.isoformat(" ", "seconds")[:19]  # then any "+HH:MM"
    return head


def stamp_sqlite(when: datetime) -> str:
    """A datetime as SQLAlchemy's SQLite `DateTime` stores it (its wall-clock fields; no zone)."""
    return f"{_second(when)}.{when.microsecond:06d}"


def stamp_postgresql(when: datetime) -> datetime | str:
    """A datetime as PostgreSQL's `timestamptz` takes it: the text of a UTC one (what niceeval stamps), built as
    `stamp_sqlite` builds it (psycopg formats a datetime with `isoformat`, a large share of a batch's writing);
    any other datetime as it is, for psycopg to adapt."""
    if when.tzinfo is not UTC:
        return when
    return f"{_second(when)}.{when.microsecond:06d}+00"


def _bind_plainly() -> None:
    """Give `None` and `bool` parameters the adapters they already get in effect (NULL, 0 and 1).

    `sqlite3` binds the exact `int`, `float`, `str` and `bytes` types directly; any other parameter goes through its
    adapter protocol, which on Python 3.11 raises and formats an `AttributeError` (`__adapt__` on its protocol
    type) when no adapter is registered, for each of the many `None` and `bool` values of a run's rows: a large
    share of the writes. Process-wide, but what any caller's `None` and `bool` parameters are stored as does not
    change, and an adapter the program registered itself is left in place.
    """
    if (type(None), sqlite3.PrepareProtocol) not in sqlite3.adapters:
        null: dict[None, None] = {}
        sqlite3.register_adapter(type(None), cast("Callable[[None], None]", null.get))  # C, returns `None`
    if (bool, sqlite3.PrepareProtocol) not in sqlite3.adapters:
        sqlite3.register_adapter(bool, int)


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between the two databases at the driver level."""

    kind: Kind
    mark: str
    """The driver's parameter placeholder."""
    json_cast: str
    """Written after the placeholder of a JSON column (PostgreSQL casts the text to `json`)."""
    stamp: Callable[[datetime], Any]
    """A datetime as this database's `DateTime` column takes it."""
    uncompiled: str | None = None
    """The statement that keeps the rest of the transaction's plans from being compiled to machine code
    (PostgreSQL's JIT, which starts on a plan's estimated cost): for statements made of index lookups whose
    estimate overstates them, where compiling takes longer than running (`_kept_sums`)."""
    hashed: tuple[str, str] | None = None
    """The statements that keep a statement's joins off nested loops, and put them back (PostgreSQL): for a join of
    a run's rows to its plan whose estimate comes from statistics taken when the run did not exist (a new run's id
    is never among them, so both sides look like a row or two), where a nested loop over an unindexed side is
    quadratic: closing a 20,000-eval run took 217 s after an `ANALYZE` of an earlier run (`Session.hash_joins`)."""


DIALECTS = {
    "sqlite": Dialect("sqlite", "?", "", stamp_sqlite),
    "postgresql": Dialect(
        "postgresql",
        "%s",
        "::json",
        stamp_postgresql,
        "SET LOCAL jit = off",
        ("SET LOCAL enable_nestloop = off", "RESET enable_nestloop"),
    ),
}


@dataclass(slots=True)
class Session:
    """A DB-API connection inside a transaction, with its dialect (the caller begins and ends the transaction)."""

    connection: Any
    dialect: Dialect
    sequences: dict[str, str] = field(default_factory=dict)
    """PostgreSQL: the sequence behind each table's `id`, looked up once."""

    def hash_joins(self, on: bool) -> None:
        """From now on in this transaction, joins off nested loops (`on`), or back as they were (`Dialect.hashed`;
        nothing on SQLite): for statements that fold every row of one suite run, which a join by hash reads once
        whatever the statistics say."""
        if self.dialect.hashed is not None:
            self.execute(self.dialect.hashed[0] if on else self.dialect.hashed[1])

    def sql(self, text: str) -> str:
        """`text` written with `?` placeholders, in this driver's."""
        return text if self.dialect.mark == "?" else text.replace("?", "%s")

    def execute(self, text: str, params: Sequence[Any] = ()) -> Any:
        cursor = self.connection.cursor()
        cursor.execute(self.sql(text), params)
        return cursor

    def stream(self, text: str, params: Sequence[Any] = ()) -> Iterator[tuple[Any, ...]]:
        """The rows of a query as they are read: a million of them are never all in memory at once.

        SQLite's cursor steps through its rows one by one. PostgreSQL's would hand over the whole result, so the
        query runs in a server-side cursor (inside the session's transaction), `STREAM_ROWS` rows a round trip."""
        if self.dialect.kind == "sqlite":
            yield from self.execute(text, params)
            return
        with self.connection.cursor(name=f"niceeval_stream_{next(_STREAMS)}") as cursor:
            cursor.itersize = STREAM_ROWS
            cursor.execute(self.sql(text), params)
            yield from cursor

    def run(self, prepared: str, params: Sequence[Any]) -> None:
        """Run `prepared` (already in this driver's placeholders) once, with `params`."""
        self.connection.cursor().execute(prepared, params)

    def executemany(self, prepared: str, rows: list[tuple[Any, ...]]) -> None:
        """Run `prepared` (already in this driver's placeholders) once per row."""
        if rows:
            self.connection.cursor().executemany(prepared, rows)

    def copy(self, statement: str, rows: Sequence[tuple[Any, ...]]) -> None:
        """PostgreSQL: `rows` into a table by `statement`, a `COPY ... FROM STDIN`."""
        with self.connection.cursor().copy(statement) as copy:
            for row in rows:
                copy.write_row(row)

    def new_ids(self, counts: dict[str, int]) -> dict[str, Sequence[int]]:
        """For each table, its number of new rows' ids, free for this transaction alone.

        SQLite: the writer holds the database's write lock (`BEGIN IMMEDIATE`), so the ids after each table's
        largest are free until it commits (one query for all the tables). PostgreSQL: drawn from each column's own
        sequence, which never gives an id twice.
        """
        wanted = {table: count for table, count in counts.items() if count}
        found: dict[str, Sequence[int]] = {table: [] for table in counts}
        if not wanted:
            return found
        if self.dialect.kind == "sqlite":
            largest = self.execute(
                "SELECT " + ", ".join(f"(SELECT coalesce(max(id), 0) FROM {table})" for table in wanted)
            ).fetchone()
            for (table, count), last in zip(wanted.items(), largest, strict=True):
                found[table] = range(last + 1, last + 1 + count)
            return found
        missing = [table for table in wanted if table not in self.sequences]
        if missing:
            self.sequences.update(zip(missing, self.execute(*sequences_query(missing)).fetchone(), strict=True))
        found.update(zip(wanted, self.execute(*ids_query(wanted, self.sequences)).fetchone(), strict=True))
        return found


def sequences_query(tables: Sequence[str]) -> tuple[str, list[str]]:
    """PostgreSQL: the query of the sequence behind each of `tables`' `id` column (one row)."""
    return "SELECT " + ", ".join(["pg_get_serial_sequence(%s, 'id')"] * len(tables)), list(tables)


def ids_query(wanted: dict[str, int], sequences: dict[str, str]) -> tuple[str, list[Any]]:
    """PostgreSQL: the query of `wanted[table]` new ids of each table, drawn from its sequence: one row of arrays,
    one round trip for the batch."""
    draw = "ARRAY(SELECT nextval(%s::regclass) FROM generate_series(1, %s))"
    params: list[Any] = []
    for table, count in wanted.items():
        params += [sequences[table], count]
    return "SELECT " + ", ".join([draw] * len(wanted)), params


def session_of(conn: Connection) -> Session:
    """A session on the driver connection of a SQLAlchemy connection already in a transaction."""
    return Session(conn.connection.driver_connection, DIALECTS[conn.dialect.name])


def revision(connection: Any, kind: Kind) -> str | None:
    """The schema revision Alembic recorded in the store (None: no schema yet, or an unreadable one)."""
    if kind == "sqlite":
        found = connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'"
        ).fetchone()
        if found is None:
            return None
        row = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    else:
        cursor = connection.cursor()
        cursor.execute("SELECT to_regclass('alembic_version') IS NOT NULL")
        if not cursor.fetchone()[0]:
            connection.rollback()
            return None
        cursor.execute("SELECT version_num FROM alembic_version")
        row = cursor.fetchone()
        connection.rollback()  # end the read's transaction: nothing is held between writes
    return str(row[0]) if row is not None else None


class Busy(Exception):
    """Another writer holds the SQLite store's write lock (raised instead of waiting for it)."""


@contextmanager
def writing(connection: Any, dialect: Dialect, *, wait: bool = True) -> Iterator[Session]:
    """A write transaction on a connection of this module's (`connect`): committed at the end, rolled back on
    an error. SQLite, `wait=False`: `Busy` at once, nothing begun, when another writer holds the lock."""
    if dialect.kind == "sqlite":
        # Writers take the lock up front: a deferred transaction upgrading to a write can fail at once with
        # "database is locked" instead of waiting for the other writer.
        if wait:
            connection.execute("BEGIN IMMEDIATE")
        else:
            _begin_at_once(connection)
    try:
        yield Session(connection, dialect)
    except BaseException:
        with suppress(Exception):
            connection.execute("ROLLBACK") if dialect.kind == "sqlite" else connection.rollback()
        raise
    if dialect.kind == "sqlite":
        connection.execute("COMMIT")
    else:
        connection.commit()


def _begin_at_once(connection: sqlite3.Connection) -> None:
    (waits,) = connection.execute("PRAGMA busy_timeout").fetchone()
    connection.execute("PRAGMA busy_timeout=0")
    try:
        connection.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorcode == sqlite3.SQLITE_BUSY:
            raise Busy from None
        raise
    finally:
        connection.execute(f"PRAGMA busy_timeout={int(waits)}")


def store_wide(exc: BaseException) -> bool:
    """Whether `exc` is a failure of the store itself (locked, full, gone), not of the rows written."""
    if isinstance(exc, sqlite3.OperationalError | OSError):
        return True
    psycopg = sys.modules.get("psycopg")
    if psycopg is not None and isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return True
    if "sqlalchemy.exc" in sys.modules:  # raised by `Store` (only imported when something already uses it)
        from sqlalchemy.exc import DBAPIError, OperationalError

        if isinstance(exc, OperationalError):
            return True
        if isinstance(exc, DBAPIError):
            return exc.connection_invalidated or (exc.orig is not None and store_wide(exc.orig))
    return False
