"""docs/experiments-compare.md is true: its project runs as two setups and its script prints what the page says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "experiments-compare.md"
BLOCK = re.compile(r"```python\n# file: (?P<path>\S+)\n(?P<body>.*?)```", re.S)


@pytest.mark.slow
def test_the_pages_two_setups_compare_as_it_says(tmp_path: Path) -> None:
    text = DOC.read_text()
    for block in BLOCK.finditer(text):
        target = tmp_path / block["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block["body"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("NICEEVAL")}
    for setup, code in (("mini", 1), ("large", 0)):
        done = subprocess.run([sys.executable, "-m", "niceeval.cli", "run"], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, env={**env, "SETUP": setup})  # fmt: skip
        assert done.returncode == code, done.stdout + done.stderr
    done = subprocess.run([sys.executable, "compare_setups.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = text.split("python compare_setups.py\n```\n\nprints\n\n```\n", 1)[1].split("```", 1)[0]
    assert done.stdout == printed
