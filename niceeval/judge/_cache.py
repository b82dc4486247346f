"""The judge cache: verdicts already paid for, in one SQLite file, keyed by everything that shaped the question.

The key is a SHA-256 of the provider, the model, the full prompt (every message), the answer schema and the
request parameters, so any change to what would be sent is a miss. A value is the validated answer and its
token counts; errors and inconclusive results are never stored. The file holds no timestamps and is rebuilt in
key order when a writer closes it, so the same verdicts give the same file: it can be committed and replayed in
CI with `--cache-only`. Concurrent runs share it safely: WAL journaling, a busy timeout for other processes,
a lock for this process's threads, and every query off the event loop in a worker thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self, TypeVar

import anyio.to_thread

from niceeval._core.sqlite_wal import use_wal

T = TypeVar("T")
CacheMode = Literal["read_write", "write_only", "read_only_strict"]
"""How a run uses the cache: `read_write` (normal), `write_only` (`--runs` repeats after the first: fresh
verdicts, still stored), `read_only_strict` (`--cache-only`: a miss is an error, nothing is stored)."""

DEFAULT_PATH = Path(".niceeval") / "judge-cache.sqlite"
"""Where the cache lives, under the project root."""
_BUSY_TIMEOUT = 30.0
"""Seconds a query waits for another connection (maybe another process) to release the file."""
_FORMAT = 1
"""Bumped when keys or values change meaning; part of every key, so old entries simply miss."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS verdicts (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    answer TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cache_read_tokens INTEGER NOT NULL
) WITHOUT ROWID
"""


@dataclass(frozen=True, kw_only=True, slots=True)
class CachedVerdict:
    """A stored answer: the validated JSON the judge gave, and what the original call spent."""

    model: str
    answer: dict[str, Any]
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0


def cache_key(model: str, messages: list[dict[str, str]], schema: dict[str, Any], params: dict[str, Any]) -> str:
    """The key of one question: a hash of the model (`provider/name`), the prompt, the schema and parameters."""
    payload = {"format": _FORMAT, "model": model, "messages": messages, "schema": schema, "params": params}
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class JudgeCacheDamaged(sqlite3.DatabaseError):
    """The judge cache file is not a readable SQLite database: the message names it and says what to do."""


class JudgeCache:
    """A judge cache file. Open it once per suite and close it at the end (or use it as a context manager).

    Args:
        path: The SQLite file; its folder is created on first use. See `default_cache_path()`.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._wrote = False
        self._said_damaged = False

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT, isolation_level=None, check_same_thread=False)
            try:
                _setup(db)
            except sqlite3.DatabaseError as exc:
                db.close()
                if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                    raise
                raise self._damaged(exc) from exc
            except BaseException:
                db.close()
                raise
            self._db = db
        return self._db

    def _damaged(self, exc: sqlite3.DatabaseError) -> JudgeCacheDamaged:
        damaged = JudgeCacheDamaged(
            f"the judge cache {self.path} is damaged ({exc}): delete it (rm {self.path}) or move it away; until "
            "then every verdict is asked of the judge again and none is stored"
        )
        if not self._said_damaged:  # once per cache, on stderr: each judge call's reason says it too
            self._said_damaged = True
            with contextlib.suppress(OSError, ValueError):
                print(f"niceeval: warning: {damaged}", file=sys.stderr)
        return damaged

    def _locked(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            return fn(self._connect())

    def get_sync(self, key: str) -> CachedVerdict | None:
        """The stored verdict for `key`, or None (blocking; prefer `get` in async code)."""
        row = self._locked(
            lambda db: db.execute(
                "SELECT model, answer, input_tokens, output_tokens, cache_read_tokens FROM verdicts WHERE key = ?",
                (key,),
            ).fetchone()
        )
        if row is None:
            return None
        model, answer, input_tokens, output_tokens, cache_read_tokens = row
        return CachedVerdict(
            model=model,
            answer=json.loads(answer),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_tokens=cache_read_tokens,
        )

    def put_sync(self, key: str, verdict: CachedVerdict) -> None:
        """Store (or replace) the verdict for `key` (blocking; prefer `put` in async code)."""
        row = (
            key,
            verdict.model,
            json.dumps(verdict.answer, sort_keys=True, ensure_ascii=False),
            verdict.input_tokens,
            verdict.output_tokens,
            verdict.cache_read_tokens,
        )
        self._locked(lambda db: db.execute("INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?, ?, ?)", row))
        self._wrote = True

    async def get(self, key: str) -> CachedVerdict | None:
        """The stored verdict for `key`, or None; the query runs in a worker thread."""
        return await anyio.to_thread.run_sync(self.get_sync, key)

    async def put(self, key: str, verdict: CachedVerdict) -> None:
        """Store the verdict for `key`; the query runs in a worker thread."""
        await anyio.to_thread.run_sync(self.put_sync, key, verdict)

    def __len__(self) -> int:
        row = self._locked(lambda db: db.execute("SELECT COUNT(*) FROM verdicts").fetchone())
        return int(row[0])

    def clear(self) -> int:
        """Remove every stored verdict (what `niceeval cache clear` does); returns how many there were."""
        count = len(self)
        self._locked(lambda db: db.execute("DELETE FROM verdicts"))
        self._wrote = True
        return count

    def close(self) -> None:
        """Close the file. After writes, rebuild it in key order so equal contents give an equal file."""
        with self._lock:
            db, self._db = self._db, None
            if db is None:
                return
            try:
                if self._wrote:
                    db.execute("VACUUM")
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.OperationalError:
                pass  # another process has the file open; it will tidy up when it closes
            finally:
                db.close()
                self._wrote = False

    async def aclose(self) -> None:
        """`close()` in a worker thread, for async code."""
        await anyio.to_thread.run_sync(self.close)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _setup(db: sqlite3.Connection) -> None:
    """WAL journaling and the table."""
    use_wal(db, _BUSY_TIMEOUT)
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(_SCHEMA)


def default_cache_path(root: Path) -> Path:
    """The cache file of the project at `root`: `<root>/.niceeval/judge-cache.sqlite`."""
    return root / DEFAULT_PATH
