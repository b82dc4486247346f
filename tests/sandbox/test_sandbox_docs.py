"""docs/sandbox.md's example is real: its `# file:` blocks are written out, run, and print what it says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "sandbox.md"
FILE_BLOCK = re.compile(r"```python\n# file: (?P<path>\S+)\n(?P<body>.*?)```", re.S)
OUTPUT_BLOCK = re.compile(r"prints:\n\n```text\n(?P<output>.*?)```", re.S)


def test_sandbox_guide_example_prints_what_the_guide_says(tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    for block in FILE_BLOCK.finditer(text):
        target = tmp_path / block["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block["body"], encoding="utf-8")
    expected = OUTPUT_BLOCK.search(text)
    assert expected is not None
    done = subprocess.run(
        [sys.executable, "score_greeter.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert (done.stdout, done.stderr) == (expected["output"], "")
