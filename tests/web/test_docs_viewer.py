"""docs/viewer.md is true: its project runs and the viewer shows it; every screenshot it shows exists."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from niceeval.store import Store
from niceeval.web import Access, ViewerSettings, create_app

DOC = Path(__file__).resolve().parents[2] / "docs" / "viewer.md"
BLOCK = re.compile(r"```python\n# file: (?P<path>\S+)\n(?P<body>.*?)```", re.S)


@pytest.mark.slow
def test_the_docs_project_runs_and_shows_in_the_viewer(tmp_path: Path) -> None:
    for block in BLOCK.finditer(DOC.read_text()):
        target = tmp_path / block["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block["body"])
    for _ in range(2):
        done = subprocess.run([sys.executable, "-m", "niceeval.cli", "run"], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    with Store.open(".niceeval/results.db", root=tmp_path) as store:
        app = create_app(ViewerSettings(store=store, access=Access(token=None, loopback=True)))
        browser = TestClient(app, base_url="http://127.0.0.1:7575")
        latest = store.runs()[0].id
        assert browser.get("/").text.count('<td class="id"><a href="/runs/') == 2
        page = browser.get(f"/runs/{latest}/eval?id=evals/shop.py::refund").text
        assert "lookup_order" in page and "order #1234 is on its way" in page


def test_every_screenshot_the_docs_show_exists() -> None:
    images = re.findall(r"!\[[^\]]*\]\((img/[^)]+)\)", DOC.read_text())
    assert len(images) >= 7
    assert [i for i in images if not (DOC.parent / i).is_file()] == []
