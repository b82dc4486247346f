"""docs/sandbox.md's "Bring your Dockerfile" and "Bring your Compose file" walkthroughs are real: their files are
written out and `niceeval run` passes.

No registry is reachable from CI, so their `python:3.12-slim` is replaced by the base image built from Debian's
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
    run_walkthrough(tmp_path, "## Bring your Dockerfile", {"env/Dockerfile", "evals/test_greeter.py"}, "greets_by_name")


@pytest.mark.slow
def test_the_compose_walkthrough_runs_and_passes(tmp_path: Path) -> None:
    run_walkthrough(tmp_path, "## Bring your Compose file", {"evals/compose.yaml"}, "reaches_the_api")


def run_walkthrough(tmp_path: Path, heading: str, files: set[str], eval_name: str) -> None:
    needs_docker()
    text = DOC.read_text(encoding="utf-8")
    start = text.index(heading)
    section = text[start : text.index("\n## ", start + 1)]
    blocks = list(FILE_BLOCK.finditer(section))
    assert {block["path"] for block in blocks} >= files
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
    assert eval_name in done.stdout and "1 passed" in done.stdout, done.stdout
