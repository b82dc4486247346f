"""Writing cases in the browser: the form, its validation, versions, deletes, and CSRF."""

from __future__ import annotations

import re

import pytest
from _stored import record, result
from starlette.testclient import TestClient

from niceeval.store import Store
from niceeval.store.cases import CaseBook, CaseRound, UiCase

ORIGIN = {"origin": "http://127.0.0.1:7575"}


def csrf(browser: TestClient, path: str = "/cases/new") -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', browser.get(path).text)
    assert found, "the form carries no CSRF token"
    return found.group(1)


def form(token: str, **fields: str) -> dict[str, str]:
    base = {"csrf": token, "version": "0", "name": "refund", "description": "", "tags": "", "tools": "",
            "round-0-prompt": "I want a refund", "round-0-criteria": "Names the order.", "round-0-threshold": "0.7",
            "action": "save"}  # fmt: skip
    return {**base, **fields}


def field_errors(html: str) -> list[str]:
    return re.findall(r'<p class="field-error" role="alert">([^<]+)</p>', html)


@pytest.fixture
def client(browser: TestClient) -> TestClient:
    browser.follow_redirects = False
    return browser


def test_a_valid_form_creates_the_case_and_opens_it(store: Store, client: TestClient) -> None:
    done = client.post(
        "/cases/new", data=form(csrf(client), tags="billing, support", tools="lookup_order"), headers=ORIGIN
    )
    assert done.status_code == 303 and done.headers["location"] == "/cases/refund"
    stored = CaseBook(store).get("refund")
    assert stored is not None and stored.case.tags == ["billing", "support"]
    assert stored.case.expected_tools == ["lookup_order"] and stored.case.rounds[0].criteria == "Names the order."
    page = client.get("/cases/refund").text
    assert "async def ui_refund(t: EvalContext)" in page and "Not run yet" in page


def test_mistakes_are_shown_next_to_their_fields_and_nothing_typed_is_lost(store: Store, client: TestClient) -> None:
    bad = form(csrf(client), name="Refund Me", **{"round-0-prompt": " ", "round-0-threshold": "7"})
    page = client.post("/cases/new", data=bad, headers=ORIGIN)
    assert page.status_code == 422
    assert field_errors(page.text) == [
        "use lowercase letters, digits and underscores, starting with a letter (e.g. refund_request)",
        "write the message the user sends in this round",
        "a threshold is between 0 and 1 (e.g. 0.7), not 7",
    ]
    assert 'value="Refund Me"' in page.text and ">Names the order.</textarea>" in page.text
    assert CaseBook(store).cases() == []


def test_add_and_remove_round_rerender_the_form_without_saving(store: Store, client: TestClient) -> None:
    token = csrf(client)
    more = client.post("/cases/new", data=form(token, action="add_round"), headers=ORIGIN)
    assert more.status_code == 200 and more.text.count("<fieldset") == 2
    two = form(token, **{"round-1-prompt": "When?", "round-1-criteria": "", "round-1-threshold": "0.7"})
    fewer = client.post("/cases/new", data={**two, "action": "remove_round-0"}, headers=ORIGIN)
    assert fewer.text.count("<fieldset") == 1 and ">When?</textarea>" in fewer.text
    assert CaseBook(store).cases() == []


def test_a_form_without_its_csrf_token_is_refused(store: Store, client: TestClient) -> None:
    csrf(client)
    refused = client.post("/cases/new", data=form("forged-token-0123456789"), headers=ORIGIN)
    assert refused.status_code == 403 and "reload the page" in refused.text
    assert CaseBook(store).cases() == []


def test_an_edit_saves_a_new_version_and_keeps_the_name(store: Store, client: TestClient) -> None:
    CaseBook(store).create(UiCase(name="refund", rounds=[CaseRound(prompt="old")]))
    token = csrf(client, "/cases/refund/edit")
    edit = form(token, version="1", name="renamed", **{"round-0-prompt": "new"})
    assert client.post("/cases/refund/edit", data=edit, headers=ORIGIN).status_code == 303
    stored = CaseBook(store).get("refund")
    assert stored is not None and stored.version == 2 and stored.case.rounds[0].prompt == "new"
    assert CaseBook(store).get("renamed") is None
    history = client.get("/cases/refund").text.split("<h2>History</h2>")[1]
    assert history.count("<tr><td") == 2 and "edited" in history and "created" in history


def test_an_edit_of_a_version_changed_meanwhile_is_refused_with_what_to_do(store: Store, client: TestClient) -> None:
    book = CaseBook(store)
    book.create(UiCase(name="refund", rounds=[CaseRound(prompt="old")]))
    book.update(UiCase(name="refund", rounds=[CaseRound(prompt="theirs")]), expected_version=1)
    mine = form(csrf(client, "/cases/refund/edit"), version="1", **{"round-0-prompt": "mine"})
    refused = client.post("/cases/refund/edit", data=mine, headers=ORIGIN)
    assert refused.status_code == 409 and "changed by someone else meanwhile" in refused.text
    assert book.get("refund").case.rounds[0].prompt == "theirs"  # type: ignore[union-attr]


def test_delete_removes_the_case_and_keeps_its_history(store: Store, client: TestClient) -> None:
    CaseBook(store).create(UiCase(name="refund", rounds=[CaseRound(prompt="hi")]))
    done = client.post("/cases/refund/delete", data={"csrf": csrf(client), "version": "1"}, headers=ORIGIN)
    assert done.status_code == 303 and done.headers["location"] == "/cases?deleted=refund"
    assert "Deleted case <strong>refund</strong>" in client.get(done.headers["location"]).text
    page = client.get("/cases/refund").text
    assert "deleted: only its history is left" in page and "Edit</a>" not in page


def test_the_cases_list_shows_each_cases_latest_result(store: Store, client: TestClient) -> None:
    CaseBook(store).create(UiCase(name="refund", rounds=[CaseRound(prompt="hi")]))
    CaseBook(store).create(UiCase(name="unrun", rounds=[CaseRound(prompt="hi")]))
    run = record(store, [result("ui::refund", "failed")])
    listed = client.get("/cases").text
    assert f'href="/runs/{run}/eval?id=ui%3A%3Arefund&amp;run=0"><span class="badge failed">' in listed
    assert "not run yet" in listed.split("unrun</a>")[1]


def test_a_case_that_never_existed_is_a_404(client: TestClient) -> None:
    assert client.get("/cases/nope").status_code == 404
    assert client.get("/cases/nope/edit").status_code == 404


def test_case_text_is_escaped_in_the_form_and_the_page(store: Store, client: TestClient) -> None:
    hostile = "</textarea><script>alert(1)</script>"
    CaseBook(store).create(UiCase(name="refund", description=hostile, rounds=[CaseRound(prompt=hostile)]))
    for path in ("/cases/refund/edit", "/cases/refund", "/cases"):
        html = client.get(path).text
        assert "<script>alert(1)" not in html and "</textarea><script>" not in html, path
    assert "&lt;/textarea&gt;&lt;script&gt;" in client.get("/cases/refund/edit").text
