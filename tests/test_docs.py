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


@pytest.mark.slow
def test_store_read_example_runs_on_a_recorded_suite(tmp_path: Path) -> None:
    (tmp_path / "niceeval.config.py").write_text(
        "from niceeval import define_config\n\nconfig = define_config(agent=lambda m: 'echo: ' + m)\n"
    )
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "talk.py").write_text(
        "from niceeval import define_eval\nfrom niceeval.expect import includes\n\n\n"
        "@define_eval\nasync def greets(t):\n    await t.send('hi')\n    t.check(t.reply, includes('hi'))\n"
    )
    ran = subprocess.run([sys.executable, "-m", "niceeval.cli", "run"], cwd=tmp_path, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    blocks = {b["path"]: b["body"] for b in BLOCK.finditer((DOCS / "store.md").read_text())}
    (tmp_path / "look_back.py").write_text(blocks["look_back.py"])
    done = subprocess.run([sys.executable, "look_back.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == [
        "evals/talk.py::greets 0 passed",
        """["includes('hi')"] ['message', 'message']""",
        f"{done.stdout.split()[0]} passed",
    ]


CELL = re.compile(r"```python\n# cell \d+\n(?P<body>.*?)```", re.S)

KERNEL = """\
import ast, asyncio, json, sys

async def kernel(cells):
    namespace = {}
    for source in cells:  # as Jupyter runs a cell: on its event loop, top-level await allowed
        outcome = eval(compile(source, "<cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT), namespace)
        if asyncio.iscoroutine(outcome):
            await outcome

asyncio.run(kernel(json.loads(open(sys.argv[1]).read())))
"""


@pytest.mark.slow
def test_notebook_walkthrough_runs_cell_by_cell_inside_an_event_loop(tmp_path: Path) -> None:
    import json

    page = (DOCS / "notebooks.md").read_text()
    for block in BLOCK.finditer(page):
        target = tmp_path / block["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block["body"])
    cells = [cell["body"] for cell in CELL.finditer(page)]
    assert len(cells) == 6
    (tmp_path / "cells.json").write_text(json.dumps(cells))
    done = subprocess.run(
        [sys.executable, "-c", KERNEL, "cells.json"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    printed = [line for line in done.stdout.splitlines() if not line.startswith((" ", "niceeval ·"))]
    expected = [
        "1 False True",
        "2 evals (1 passed, 1 failed), 6 runs",
        "failed includes('approved') 'echo: I want a refund'",
        "{'passed': 1, 'scored': 0, 'failed': 1, 'skipped': 0}",
        "{('evals/support.py::greets', 'passed'): 3, ('evals/support.py::refunds', 'failed'): 3}",
        """3 ["includes('approved')"]""",
        "(6, 0.5)",
        "['evals/support.py::greets'] True",
    ]
    assert [line for line in printed if line in expected] == expected, done.stdout
