"""The viewer app as a browser sees it over HTTP: pages in the layout, static files, errors as pages."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient


def test_the_home_page_is_the_runs_list(browser: TestClient) -> None:
    response = browser.get("/")
    assert response.status_code == 200 and "<h1>Runs</h1>" in response.text
    assert 'aria-current="page">Runs</a>' in response.text


def test_an_empty_store_says_how_to_fill_it(browser: TestClient) -> None:
    assert "No runs recorded yet. Run <code>niceeval run</code>" in browser.get("/").text


@pytest.mark.parametrize(
    ("name", "content_type"),
    [("viewer.css", "text/css"), ("viewer.js", "text/javascript"), ("favicon.svg", "image/svg+xml")],
)
def test_the_static_files_ship_in_the_package(browser: TestClient, name: str, content_type: str) -> None:
    """The viewer's script, and the stylesheet and icon it shares with the HTML report (`niceeval.render`)."""
    response = browser.get(f"/static/{name}")
    assert response.status_code == 200 and response.headers["content-type"].startswith(content_type)


def test_pages_load_no_inline_script_and_nothing_from_other_sites(browser: TestClient) -> None:
    html = browser.get("/").text
    assert "<script>" not in html and "http://" not in html and "https://" not in html
    assert '<script src="/static/viewer.js" defer></script>' in html


def test_an_unknown_page_is_a_404_page_in_the_layout(browser: TestClient) -> None:
    response = browser.get("/no/such/page")
    assert response.status_code == 404 and "<h1>404</h1>" in response.text and 'class="topbar"' in response.text
