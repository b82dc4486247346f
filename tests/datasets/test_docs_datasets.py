"""docs/datasets.md's examples are real: every `# file:` block is written into a project and run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "datasets.md"
BLOCK = re.compile(r"```\w+\n# file: (?P<path>\S+)\n(?P<body>.*?)```", re.S)


@pytest.mark.slow
def test_datasets_guide_examples_run_as_documented(tmp_path: Path) -> None:
    for block in BLOCK.finditer(DOC.read_text()):
        target = tmp_path / block["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block["body"])
    run = [sys.executable, "-m", "niceeval.cli"]
    listed = subprocess.run([*run, "list"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "evals/shouting.py::shouts[hello]" in listed.stdout and "evals/shouting.py::shouts[2]" in listed.stdout
    assert "evals/compare.py::best_style[style=exact]" in listed.stdout
    done = subprocess.run([*run, "run", "--no-store"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 passed, 2 scored, 0 failed, 0 skipped (8 evals, 8 runs)" in done.stdout
    assert "not selected (style=exact scored higher or tied first)" in done.stdout
    picked = subprocess.run(
        [*run, "run", "--no-store", "--tag", "short"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert "(1 eval, 1 run)" in picked.stdout and "shouts[bye]" in picked.stdout
    data = subprocess.run(
        [*run, "run", "--no-store", "data/shout.yaml"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert data.returncode == 0, data.stdout + data.stderr
    assert "2 passed, 0 scored, 0 failed, 0 skipped (2 evals, 2 runs)" in data.stdout
