"""What every store test shares."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .test_sink import OPENED


@pytest.fixture(autouse=True)
def recorders_closed() -> Iterator[None]:
    """The recorders a test opened through `sink_of` are closed after it (a connection left open warns)."""
    yield
    while OPENED:
        OPENED.pop().close()
