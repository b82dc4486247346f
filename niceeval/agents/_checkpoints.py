"""Where model-backed agents keep conversations between turns, so a closed session can be revived by its id.

A checkpoint is the conversation as the provider's API takes it (a list of JSON messages), saved after each
turn. `t.revive()` closes the session and opens a new one with the same id, which loads the checkpoint: the
conversation continues from storage, not from the old session object.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import OrderedDict
from contextlib import closing
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio.to_thread

from niceeval._core.redact import Redactor
from niceeval._core.text import without_surrogates

DEFAULT_CHECKPOINT_PATH = Path(".niceeval") / "checkpoints.sqlite"
"""Where `SQLiteCheckpoints()` keeps its file by default, relative to the working directory."""


class CheckpointFileDamaged(sqlite3.DatabaseError):
    """The checkpoints file is not a readable SQLite database: the message names it and says what to do."""


@runtime_checkable
class CheckpointStore(Protocol):
    """Saves and loads conversations by session id: the extension point for durable agent state."""

    async def load(self, session_id: str) -> list[dict[str, Any]] | None:
        """The messages saved for `session_id`, or None when there are none."""
        ...

    async def save(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """Replace what is saved for `session_id` with `messages` (JSON-serialisable dicts)."""
        ...


class MemoryCheckpoints:
    """Checkpoints in this process's memory: revival works within one run, nothing touches the disk.

    Messages are stored as JSON text, so a revived session gets a fresh copy, exactly as from a database.
    Only the most recent `max_sessions` conversations are kept, so a long suite's memory stays bounded.
    """

    def __init__(self, *, max_sessions: int = 1024) -> None:
        self._saved: OrderedDict[str, str] = OrderedDict()
        self._max_sessions = max_sessions

    async def load(self, session_id: str) -> list[dict[str, Any]] | None:
        """The messages saved for `session_id`, or None."""
        text = self._saved.get(session_id)
        return None if text is None else _decode(text)

    async def save(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """Replace what is saved for `session_id`."""
        self._saved.pop(session_id, None)
        # Never leaves the process, so no redaction: JSON text only, for a fresh copy on each load.
        self._saved[session_id] = json.dumps(messages, ensure_ascii=False)
        while len(self._saved) > self._max_sessions:
            self._saved.popitem(last=False)


class SQLiteCheckpoints:
    """Checkpoints in a SQLite file, which outlives the process: revival across runs and restarts.

    Each operation opens its own connection in a worker thread, so concurrent sessions (and processes) are
    safe; SQLite serialises the writes.

    Args:
        path: The database file; `.niceeval/checkpoints.sqlite` under the working directory by default. Its
            directory is created when first used.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        # Resolved now, so the file stays put if the working directory changes later.
        self.path = Path(path if path is not None else DEFAULT_CHECKPOINT_PATH).resolve()

    async def load(self, session_id: str) -> list[dict[str, Any]] | None:
        """The messages saved for `session_id`, or None."""
        text = await anyio.to_thread.run_sync(self._load, session_id)
        return None if text is None else _decode(text)

    async def save(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """Replace what is saved for `session_id`."""
        await anyio.to_thread.run_sync(self._save, session_id, _at_rest(messages))

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=30)
        try:
            connection.execute(
                "CREATE TABLE IF NOT EXISTS checkpoints "
                "(session_id TEXT PRIMARY KEY, messages TEXT NOT NULL, updated_at REAL NOT NULL)"
            )
        except sqlite3.DatabaseError as exc:
            connection.close()
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise
            raise CheckpointFileDamaged(
                f"the checkpoints file {self.path} is damaged ({exc}): move it away (the next run starts a new "
                "one; sessions saved in it can no longer be revived)"
            ) from exc
        return connection

    def _load(self, session_id: str) -> str | None:
        with closing(self._connect()) as connection:
            row = connection.execute("SELECT messages FROM checkpoints WHERE session_id = ?", (session_id,)).fetchone()
        return None if row is None else str(row[0])

    def _save(self, session_id: str, text: str) -> None:
        with closing(self._connect()) as connection, connection:
            connection.execute(
                "INSERT INTO checkpoints (session_id, messages, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT(session_id) DO UPDATE SET messages = excluded.messages, updated_at = excluded.updated_at",
                (session_id, text, time.time()),
            )


def _at_rest(messages: list[dict[str, Any]]) -> str:
    """The conversation as saved: JSON, lone surrogates as U+FFFD (SQLite takes UTF-8), secrets redacted (an
    environment API key the conversation quotes never lands in a file), as in every report."""
    return without_surrogates(json.dumps(Redactor.from_environment().data(messages), ensure_ascii=False))


def _decode(text: str) -> list[dict[str, Any]]:
    messages = json.loads(text)
    if not isinstance(messages, list):
        raise ValueError("a checkpoint must hold a list of messages")
    return messages
