"""Wiring the results store into `niceeval run`: which store, the suite run's identity, the sink.

The store URL comes from, first to last: `--no-store`, `--store URL`, `NICEEVAL_STORE`, the config's `store=`,
and the default, a SQLite file at `<root>/.niceeval/results.db`. The runner hands finished runs to the store's
sink like to any reporter (first, so a run is stored before reporters see it).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from niceeval.store import Store, StoreSink, SuiteRunStart

ENV_VAR = "NICEEVAL_STORE"


@dataclass(frozen=True, kw_only=True, slots=True)
class StoreRequest:
    """What the command line and config say about the store."""

    flag: str | None = None
    """`--store URL`."""
    off: bool = False
    """`--no-store`."""
    configured: str | bool | None = None
    """The config's `store=` (False: off)."""
    root: Path


def store_location(request: StoreRequest) -> str | None:
    """The store URL or path to use, or None when the store is off."""
    if request.off:
        return None
    chosen = request.flag or os.environ.get(ENV_VAR) or None
    if chosen is None:
        if request.configured is False:
            return None
        chosen = request.configured if isinstance(request.configured, str) else None
    if chosen is None:
        from niceeval.store import DEFAULT_PATH

        return str(request.root / DEFAULT_PATH)
    return chosen


def open_store(request: StoreRequest) -> Store | None:
    """The store to use, opened (None when off); `StoreError` (exit 2) when it cannot be opened."""
    location = store_location(request)
    if location is None:
        return None
    from niceeval.store import Store

    return Store.open(location, root=request.root)


def new_run_id() -> str:
    """A new suite run id: 12 hex characters (a unique prefix of 4+ names it on the command line)."""
    return uuid.uuid4().hex[:12]


def _git(root: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def suite_start(root: Path, config_file: Path | None, *, strict: bool, min_pass_rate: float) -> SuiteRunStart:
    """The identity and context of a new suite run: command line, git commit/branch/dirty, config digest."""
    from niceeval.store import SuiteRunStart

    commit = _git(root, "rev-parse", "HEAD")
    digest = hashlib.sha256(config_file.read_bytes()).hexdigest() if config_file and config_file.is_file() else None
    return SuiteRunStart(
        id=new_run_id(),
        command=["niceeval", *sys.argv[1:]],
        root=str(root),
        git_commit=commit,
        git_branch=_git(root, "rev-parse", "--abbrev-ref", "HEAD") if commit else None,
        git_dirty=bool(_git(root, "status", "--porcelain", "--untracked-files=no")) if commit else None,
        config_digest=digest,
        strict=strict,
        min_pass_rate=min_pass_rate,
    )


def store_sink(store: Store, start: SuiteRunStart, *, resume: bool = False) -> StoreSink:
    """The sink that records the suite run `start.id` in `store`."""
    from niceeval.store import StoreSink

    return StoreSink(store, start, resume=resume)
