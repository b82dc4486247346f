"""Shared fixtures: a small fixture folder and a sandbox made from it, closed after each test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sandbox_helpers import write_tree

from niceeval.sandbox import LocalSandbox


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def fixture_dir(tmp_path: Path) -> Path:
    return write_tree(
        tmp_path / "fixture",
        {
            "README.md": "# Demo\n",
            "src/app.py": "def greet():\n    return 'hi'\n",
            "EVAL.py": "def test_nothing():\n    pass\n",
        },
    )


@pytest.fixture
async def sandbox(anyio_backend: str, fixture_dir: Path, tmp_path: Path) -> AsyncIterator[LocalSandbox]:
    created = await LocalSandbox.create(fixture_dir, temp_dir=tmp_path)
    yield created
    await created.close()
