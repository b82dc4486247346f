"""`niceeval run | head`: a closed stdout drops the console, never the suite or its reports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_a_closed_stdout_keeps_the_exit_code_and_the_json_report(tmp_path: Path) -> None:
    evals = "\n".join(
        f"@define_eval\nasync def e{i}(t):\n    t.check('abc', includes('a'))\n" for i in range(40)
    )
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "many.py").write_text(
        "from niceeval import define_eval\nfrom niceeval.expect import includes\n\n" + evals
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "niceeval.cli", "run", "--concurrency", "1", "--json", "report.json"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.readline()
    process.stdout.close()  # like `| head -1`
    stderr = process.stderr.read().decode()
    process.stderr.close()
    assert process.wait(timeout=60) == 0, stderr
    assert "Traceback" not in stderr
    assert json.loads((tmp_path / "report.json").read_text())["summary"]["passed"] == 40
