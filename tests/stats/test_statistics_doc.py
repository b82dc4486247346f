"""docs/statistics.md's worked examples print what the page says they print."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "statistics.md"
EXAMPLE = re.compile(r"```python\n# example: (?P<name>[^\n]+)\n(?P<code>.*?)```\n\n```text\n(?P<output>.*?)```", re.S)
EXAMPLES = list(EXAMPLE.finditer(PAGE.read_text(encoding="utf-8")))


def test_the_page_has_its_examples() -> None:
    assert [m["name"] for m in EXAMPLES] == ["intervals", "comparing two runs", "comparing scores", "power"]


@pytest.mark.parametrize("example", EXAMPLES, ids=[m["name"] for m in EXAMPLES])
def test_example_prints_what_the_page_shows(example: re.Match[str]) -> None:
    done = subprocess.run([sys.executable, "-c", example["code"]], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == example["output"]
