"""Facts about this niceeval that the store records."""

from __future__ import annotations

import functools

SCHEMA_REVISION = "0020_diff"
"""The Alembic revision this niceeval writes and reads (the head of `_migrations/versions`)."""


@functools.cache
def niceeval_version() -> str:
    """The installed niceeval's version (`unknown` when run from a source tree that is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("niceeval")
    except PackageNotFoundError:
        return "unknown"
