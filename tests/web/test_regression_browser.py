"""The "Make regression case" button in headless Chromium, against the real `niceeval view` of a project whose store
holds a failing online result: from the online page to the trace page, a click writes the regression, and the
page names the file and the eval. Screenshots of both pages are kept (NICEEVAL_SCREENSHOTS, else a temp folder)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _viewer import chromium, viewer

from tests.online.test_from_trace import stored_trace

pytestmark = pytest.mark.slow


def test_the_button_writes_the_regression_from_the_trace_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    trace_id = stored_trace(tmp_path, "where is my refund?", "I cannot help with that.", tool="lookup")
    shots = Path(os.environ.get("NICEEVAL_SCREENSHOTS", tmp_path / "shots"))
    shots.mkdir(parents=True, exist_ok=True)
    with viewer(tmp_path) as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        complaints: list[str] = []
        page.on("console", lambda m: complaints.append(m.text) if "Content Security Policy" in m.text else None)
        page.goto(url.rstrip("/") + "/online")
        row = page.locator("table.online-failing tbody tr", has_text=trace_id)
        assert row.locator("button", has_text="Make regression case").count() == 1
        page.screenshot(path=str(shots / "viewer-online-regression-button.png"), full_page=True)
        row.locator("a", has_text=trace_id).click()
        assert page.locator("h1").inner_text().endswith("evals/online.py::helpful")
        form = page.locator(".actions form.regression-form")
        assert form.locator("select[name=replay]").input_value() == "live"
        page.screenshot(path=str(shots / "viewer-trace-regression-button.png"), full_page=False)
        form.locator("select[name=replay]").select_option("recorded")
        form.locator("button", has_text="Make regression case").click()
        assert page.locator("h1").inner_text() == "Regression case written"
        written = page.locator("dl.regression-written").inner_text()
        assert f"trace_{trace_id[:12]}, running evals/online.py::helpful" in written
        assert str(tmp_path / "evals" / "regressions.py") in written
        assert "(3 spans, 1 tool call)" in written
        page.screenshot(path=str(shots / "viewer-regression-written.png"), full_page=False)
        page.go_back()
        page.locator(".actions form.regression-form button").click()  # a second time: already written
        assert page.locator("h1").inner_text() == "No regression written"
        assert f"already has trace_{trace_id[:12]}" in page.locator(".regression-error").inner_text()
        assert complaints == []
    module = (tmp_path / "evals" / "regressions.py").read_text()
    assert module.count(f"def trace_{trace_id[:12]}(") == 1
