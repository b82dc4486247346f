"""The viewer's guard: loopback Host only, a token off loopback, CSRF on forms, strict headers on every response."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from niceeval.web._security import (
    CONTENT_SECURITY_POLICY,
    CSRF_COOKIE,
    TOKEN_COOKIE,
    Access,
    Guard,
    form_is_genuine,
    is_loopback,
)
from niceeval.web._serve import access_for, viewer_url

LOCAL = "http://127.0.0.1:7575"
TOKEN = "s3cret-token-value-0123456789abcdef"


def _page(request: Request) -> Response:
    return PlainTextResponse(f"page csrf={request.scope['state']['csrf']}")


async def _post(request: Request) -> Response:
    form = (await request.body()).decode()
    submitted = dict(part.split("=", 1) for part in form.split("&") if "=" in part).get("csrf")
    genuine = form_is_genuine(submitted, request.cookies.get(CSRF_COOKIE, ""))
    return PlainTextResponse("saved" if genuine else "forged", status_code=200 if genuine else 403)


def client(access: Access, base_url: str = LOCAL) -> TestClient:
    app = Starlette(routes=[Route("/", _page), Route("/save", _post, methods=["POST"])])
    return TestClient(Guard(app, access), base_url=base_url, follow_redirects=False)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_addresses_are_recognised(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.com", ""])
def test_other_addresses_are_not_loopback(host: str) -> None:
    assert not is_loopback(host)


def test_a_loopback_viewer_needs_no_token() -> None:
    assert client(Access(token=None, loopback=True)).get("/").status_code == 200


def test_a_non_loopback_host_gets_a_generated_token() -> None:
    access = access_for("0.0.0.0", None)
    assert access.token and len(access.token) >= 40 and not access.loopback


def test_a_given_token_is_kept_and_enforced_even_on_loopback() -> None:
    assert access_for("127.0.0.1", TOKEN) == Access(token=TOKEN, loopback=True)


def test_the_printed_url_carries_the_token() -> None:
    assert viewer_url("10.0.0.5", 7575, TOKEN) == f"http://10.0.0.5:7575/?token={TOKEN}"
    assert viewer_url("::1", 80, None) == "http://[::1]:80/"


def test_without_the_token_every_request_is_refused() -> None:
    guarded = client(Access(token=TOKEN, loopback=False), base_url="http://10.0.0.5:7575")
    for path in ("/", "/static/viewer.css", "/anything"):
        response = guarded.get(path)
        assert response.status_code == 401 and "token" in response.text


def test_a_wrong_token_is_refused() -> None:
    guarded = client(Access(token=TOKEN, loopback=False), base_url="http://10.0.0.5:7575")
    assert guarded.get("/", params={"token": "wrong"}).status_code == 401
    assert guarded.get("/", headers={"authorization": "Bearer wrong"}).status_code == 401


def test_the_token_in_the_url_becomes_a_cookie_and_leaves_the_address_bar() -> None:
    guarded = client(Access(token=TOKEN, loopback=False), base_url="http://10.0.0.5:7575")
    response = guarded.get("/runs", params={"token": TOKEN, "page": "2"})
    assert response.status_code == 303 and response.headers["location"] == "/runs?page=2"
    cookie = response.headers["set-cookie"]
    assert f"{TOKEN_COOKIE}={TOKEN}" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert guarded.get("/").status_code == 200  # the client now sends the cookie


def test_a_bearer_header_is_accepted_for_scripts() -> None:
    guarded = client(Access(token=TOKEN, loopback=False), base_url="http://10.0.0.5:7575")
    assert guarded.get("/", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_a_foreign_host_header_is_refused_on_loopback() -> None:
    rebinding = client(Access(token=None, loopback=True), base_url="http://attacker.example:7575")
    assert rebinding.get("/").status_code == 400


def test_every_response_carries_the_strict_headers() -> None:
    guarded = client(Access(token=TOKEN, loopback=False), base_url="http://10.0.0.5:7575")
    for response in (guarded.get("/"), client(Access(token=None, loopback=True)).get("/")):
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["x-frame-options"] == "DENY"


def test_the_policy_forbids_inline_script_and_foreign_sources() -> None:
    directives = dict(part.strip().split(" ", 1) for part in CONTENT_SECURITY_POLICY.split(";"))
    assert directives["script-src"] == "'self'" and directives["default-src"] == "'none'"
    assert "unsafe-inline" not in CONTENT_SECURITY_POLICY and "unsafe-eval" not in CONTENT_SECURITY_POLICY


def test_a_browser_gets_a_csrf_cookie_once() -> None:
    browser = client(Access(token=None, loopback=True))
    first = browser.get("/")
    assert CSRF_COOKIE in first.headers["set-cookie"] and "SameSite=Strict" in first.headers["set-cookie"]
    assert "set-cookie" not in browser.get("/").headers


def test_a_form_with_the_csrf_token_is_accepted() -> None:
    browser = client(Access(token=None, loopback=True))
    csrf = browser.get("/").text.split("csrf=")[1]
    response = browser.post("/save", content=f"csrf={csrf}", headers={"origin": LOCAL})
    assert response.status_code == 200 and response.text == "saved"


def test_a_form_without_the_csrf_token_is_refused() -> None:
    browser = client(Access(token=None, loopback=True))
    browser.get("/")
    assert browser.post("/save", content="csrf=made-up-value-123456").status_code == 403


def test_a_post_from_another_site_is_refused_before_the_handler() -> None:
    browser = client(Access(token=None, loopback=True))
    csrf = browser.get("/").text.split("csrf=")[1]
    for headers in ({"origin": "http://evil.example"}, {"sec-fetch-site": "cross-site"}, {"origin": "null"}):
        response = browser.post("/save", content=f"csrf={csrf}", headers=headers)
        assert response.status_code == 403 and response.text == "Cross-site request refused."


def test_a_malformed_cookie_header_counts_as_no_cookie() -> None:
    browser = client(Access(token=TOKEN, loopback=False), base_url="http://10.0.0.5:7575")
    assert browser.get("/", headers={"cookie": '\x00"bad;;=='}).status_code == 401


def test_a_same_origin_form_post_is_accepted_even_with_a_null_origin() -> None:
    browser = client(Access(token=None, loopback=True))
    csrf = browser.get("/").text.split("csrf=")[1]
    headers = {"origin": "null", "sec-fetch-site": "same-origin"}
    assert browser.post("/save", content=f"csrf={csrf}", headers=headers).status_code == 200
