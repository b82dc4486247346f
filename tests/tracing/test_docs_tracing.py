"""docs/tracing.md is true: its `# file:` blocks are a project that `niceeval run` passes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "tracing.md"
BLOCK = re.compile(r"```python\n# file: (?P<path>\S+)\n(?P<body>.*?)```", re.S)


def test_tracing_page_project_passes(tmp_path: Path) -> None:
    blocks = list(BLOCK.finditer(DOC.read_text()))
    assert [b["path"] for b in blocks] == ["niceeval.config.py", "evals/orders.py"]
    for block in blocks:
        target = tmp_path / block["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block["body"])
    done = subprocess.run(
        [sys.executable, "-m", "niceeval.cli", "run", "--json", "report.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning" not in done.stderr, done.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["summary"]["passed"] == 2
    (status,) = [e for e in report["evals"] if e["id"].endswith("::order_status")]
    events = status["runs"][0]["events"]
    assert [e["type"] for e in events] == ["message", "usage", "action.called", "usage", "message"]
    assert [(e["input_tokens"], e["output_tokens"]) for e in events if e["type"] == "usage"] == [(420, 18), (470, 25)]
    call = events[2]
    assert (call["name"], call["input"], call["output"]) == ("lookup_order", {"order_id": "1234"}, "shipped")
    assert call["duration"] >= 0
