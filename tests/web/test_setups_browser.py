"""The setups page in headless Chromium, served by the real `niceeval view`: the chart draws each setup with its
intervals and the front, the table and the pairs read right, a pair's diff link opens, nothing breaks the
Content-Security-Policy; a screenshot is kept (NICEEVAL_SCREENSHOTS names the folder)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _setups import Case, once
from _viewer import chromium, viewer

from niceeval.store import Store

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("setups")
    with Store.open(f"sqlite:///{root / 'results.db'}") as store:
        once(store, "run-old", [Case(outcome="failed" if i < 11 else "passed", cost=0.002 + i * 1e-5,
                                     turns=(2.0 + i / 100,)) for i in range(12)], experiment="old-prompt")  # fmt: skip
        once(store, "run-large", [Case(cost=0.003 + i * 1e-4, turns=(1.6 + i / 40,), score=0.6 + i / 30)
                                  for i in range(12)], experiment="large")  # fmt: skip
        once(store, "run-mini", [Case(outcome="failed" if i < 3 else "passed", cost=0.0004 + i * 1e-5,
                                      turns=(0.8 + i / 50,), score=0.4 + i / 30) for i in range(12)],
             experiment="mini")  # fmt: skip
    with viewer(root, "--store", str(root / "results.db")) as url:
        yield url.rstrip("/")


@pytest.fixture
def page(site: str) -> Iterator[Any]:
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        opened = context.new_page()
        opened.csp = []
        opened.on("console", lambda m: opened.csp.append(m.text) if "Content Security Policy" in m.text else None)
        yield opened
        context.close()


def test_the_chart_table_and_pairs_show_the_front(site: str, page: Any, tmp_path: Path) -> None:
    page.goto(site + "/")
    page.click("a.button[href='/setups']")
    assert page.url == site + "/setups"
    points = page.locator("svg.front-chart g.setup-point")
    assert points.count() == 3
    assert page.locator("svg.front-chart circle.front").count() == 2
    beaten = page.locator("svg.front-chart g.setup-point:has(circle.beaten)")
    assert beaten.count() == 1 and beaten.get_attribute("data-setup") == "old-prompt"
    assert page.locator("svg.front-chart line.whisker").count() == 6  # each point: pass rate and cost
    headers = page.locator("table.setups thead th").all_inner_texts()
    assert [h.strip() for h in headers] == ["", "mini FRONT", "large FRONT", "old-prompt"]  # names as given
    relations = page.locator("table.pairs tbody tr td:nth-child(4) .badge").all_inner_texts()
    assert [r.lower() for r in relations] == ["not separable", "first dominates", "a trade-off"]
    target = Path(os.environ.get("NICEEVAL_SCREENSHOTS", tmp_path))
    target.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(target / "viewer-setups.png"), full_page=True)
    page.locator("table.pairs a", has_text="diff").first.click()
    assert page.url == site + "/compare?base=run-mini&head=run-large"
    assert page.csp == []


def test_picking_two_runs_compares_them(site: str, page: Any) -> None:
    page.goto(site + "/setups")
    for experiment in ("mini", "large", "old-prompt"):  # checked by default
        page.uncheck(f"input[value={experiment}]")
    page.check("input[value=run-old]")
    page.check("input[value=run-mini]")
    page.click("form.setup-picker button[type=submit]")
    assert page.url == site + "/setups?setup=run-mini&setup=run-old"
    assert page.locator("table.pairs tbody tr").count() == 1
    assert "run-mini vs run-old" in page.locator("table.pairs").inner_text()
