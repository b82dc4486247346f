"""docs/testing.md is true: every Python block in it runs, and every test function in it passes."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from niceeval.testing import LLMServer

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


@pytest.mark.parametrize("source", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_doc_block_runs(source: str) -> None:
    # `__name__` is not "__main__", so a block that would serve forever only defines its script.
    namespace: dict[str, object] = {"__name__": "docs_testing_example"}
    exec(compile(source, str(DOC), "exec"), namespace)
    for name, function in list(namespace.items()):
        if name.startswith("test_") and inspect.isfunction(function):
            # Stands in for the `llm_server` fixture the block's test function asks for.
            with LLMServer() as server:
                function(server)


def test_the_doc_has_examples() -> None:
    assert len(BLOCKS) >= 8
