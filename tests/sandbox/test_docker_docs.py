"""docs/sandbox.md's "Bring your Dockerfile" walkthrough is real: its files are written out and `niceeval run` passes.

No registry is reachable from CI, so its `python:3.12-slim` is replaced by the base image built from Debian's
packages (which has python3, as the walkthrough says an image needs)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from docker_helpers import BASE_IMAGE, needs_docker

DOC = Path(__file__).resolve().parents[2] / "docs" / "sandbox.md"
FILE_BLOCK = re.compile(r"```\w+\n# file: (?P<path>\S+)\n(?P<body>.*?)```", re.S)


@pytest.mark.slow
def test_the_dockerfile_walkthrough_runs_and_passes(tmp_path: Path) -> None:
    needs_docker()
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Bring your Dockerfile") : text.index("## Fixture setup")]
    blocks = list(FILE_BLOCK.finditer(section))
    assert {block["path"] for block in blocks} >= {"env/Dockerfile", "evals/test_greeter.py"}
    for block in blocks:
        target = tmp_path / block["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block["body"].replace("python:3.12-slim", BASE_IMAGE), encoding="utf-8")
    (tmp_path / "niceeval.config.py").write_text(
        "from niceeval import define_config\n\nconfig = define_config(store=False)\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "niceeval", "run"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "greets_by_name" in done.stdout and "1 passed" in done.stdout, done.stdout
