"""The store's error (a light module: the recorder raises it without importing SQLAlchemy)."""

from __future__ import annotations

from niceeval._core.errors import NiceevalError


class StoreError(NiceevalError):
    """The results store cannot be opened or written: the message names the store and what to do."""
