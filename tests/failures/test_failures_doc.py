"""docs/failures.md's example is real: its `# file:` blocks are written into a project and run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"```python\n# file: (?P<path>\S+)\n(?P<body>.*?)```", re.S)


@pytest.mark.slow
def test_the_failures_page_example_shows_each_class(tmp_path: Path) -> None:
    for block in BLOCK.finditer((DOCS / "failures.md").read_text()):
        target = tmp_path / block["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block["body"])
    done = subprocess.run(
        [sys.executable, "-m", "niceeval.cli", "run", "--no-store"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line.strip() for line in done.stdout.splitlines()]
    assert "failed for infra (not counted in the pass rate; tried 2 times)" in lines
    assert "error ConnectionError: booking service: connection refused  at niceeval.config.py:6" in lines
    assert "failed for eval" in lines
    assert (
        "HALTED evals/booking.py::needs_a_fixture: EvalFatalError in evals/booking.py::needs_a_fixture (run 1): "
        "the fixture database is missing: run `make fixtures`"
    ) in lines
    assert lines[-1].startswith("1 passed, 0 scored, 2 failed, 0 skipped (3 evals, 3 runs) in ")
    assert lines[-1].endswith(" · 1 run not counted: infra · 2 runs not started")
