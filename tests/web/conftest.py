from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from niceeval.store import Store
from niceeval.web import Access, ViewerSettings, create_app

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the `_stored` helpers beside these tests


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """An empty SQLite results store."""
    with Store.open(f"sqlite:///{tmp_path / 'results.db'}") as opened:
        yield opened


@pytest.fixture
def browser(store: Store) -> TestClient:
    """The viewer over `store`, on loopback, as a browser reaches it."""
    app = create_app(ViewerSettings(store=store, access=Access(token=None, loopback=True)))
    return TestClient(app, base_url="http://127.0.0.1:7575")
