"""The user guide's examples are real: every `# file:` block is written into a project and run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
BLOCK = re.compile(r"```python\n# file: (?P<path>\S+)\n(?P<body>.*?)```", re.S)


@pytest.mark.slow
def test_guide_examples_run_and_pass(tmp_path: Path) -> None:
    blocks = list(BLOCK.finditer((DOCS / "guide.md").read_text()))
    assert len(blocks) >= 3
    for block in blocks:
        target = tmp_path / block["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block["body"])
    done = subprocess.run(
        [sys.executable, "-m", "niceeval.cli", "run"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    defined = sum(block["body"].count("@define_eval") for block in blocks)
    assert f"0 failed, 1 skipped ({defined} evals" in done.stdout, done.stdout


@pytest.mark.slow
def test_quickstart_example_passes() -> None:
    project = DOCS.parent / "examples" / "quickstart"
    done = subprocess.run(
        [sys.executable, "-m", "niceeval.cli", "run"], cwd=project, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_pytest_page_example_passes_under_pytest(tmp_path: Path) -> None:
    blocks = list(BLOCK.finditer((DOCS / "pytest.md").read_text()))
    assert len(blocks) == 3
    for block in blocks:
        target = tmp_path / block["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block["body"])
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "evals/", "tests/"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout, done.stdout
