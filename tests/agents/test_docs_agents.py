"""docs/agents.md is true: every Python block in it runs (except the config sketch marked "not run")."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "agents.md"
BLOCKS = [b for b in re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S) if "not run" not in b.splitlines()[0]]


@pytest.mark.parametrize("source", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_doc_block_runs(source: str) -> None:
    saved = dict(os.environ)
    try:
        exec(compile(source, str(DOC), "exec"), {"__name__": "docs_agents_example"})
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_the_doc_has_examples() -> None:
    assert len(BLOCKS) >= 5
