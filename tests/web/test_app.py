"""The viewer app as a browser sees it over HTTP: pages in the layout, static files, errors as pages."""

from __future__ import annotations

from starlette.testclient import TestClient

from niceeval.web import Access, ViewerSettings, create_app
from niceeval.web._app import STATIC_DIR


def viewer(store_url: str = "sqlite:///results.sqlite") -> TestClient:
    app = create_app(ViewerSettings(store_url=store_url, access=Access(token=None, loopback=True)))
    return TestClient(app, base_url="http://127.0.0.1:7575")


def test_the_home_page_is_the_runs_list() -> None:
    response = viewer().get("/")
    assert response.status_code == 200 and "<h1>Runs</h1>" in response.text
    assert 'aria-current="page">Runs</a>' in response.text


def test_the_static_files_ship_in_the_package() -> None:
    assert (STATIC_DIR / "viewer.css").is_file() and (STATIC_DIR / "viewer.js").is_file()
    response = viewer().get("/static/viewer.css")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/css")


def test_pages_load_no_inline_script_and_nothing_from_other_sites() -> None:
    html = viewer().get("/").text
    assert "<script>" not in html and "http://" not in html and "https://" not in html
    assert '<script src="/static/viewer.js" defer></script>' in html


def test_an_unknown_page_is_a_404_page_in_the_layout() -> None:
    response = viewer().get("/no/such/page")
    assert response.status_code == 404 and "<h1>404</h1>" in response.text and 'class="topbar"' in response.text


def test_stored_text_is_escaped_in_pages() -> None:
    html = viewer("sqlite:///<script>alert(1)</script>").get("/").text
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
