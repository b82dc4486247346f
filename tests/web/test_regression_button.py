"""The trace page's and the online page's "Make regression case" button: a POST only the viewer's own page can make
(the CSRF cookie and the per-server page token in the page), writing the trace's regression as `niceeval cases
from-trace` does, with a page naming the file and the eval; clear errors for an unknown trace, an unwritable
module, and a forged request; no GET side effect."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from niceeval.store import Store
from niceeval.web import Access, ViewerSettings, create_app
from tests.online.test_from_trace import stored_trace


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A project whose store holds one failing online result of a production trace; its root and the trace id."""
    monkeypatch.chdir(tmp_path)
    return tmp_path, stored_trace(tmp_path, "where is my refund?", "I cannot help with that.", tool="lookup")


@pytest.fixture
def viewer(project: tuple[Path, str]) -> Iterator[TestClient]:
    with Store.open(str(project[0] / ".niceeval" / "results.db")) as store:
        app = create_app(ViewerSettings(store=store, access=Access(token=None, loopback=True)))
        yield TestClient(app, base_url="http://127.0.0.1:7575")


def form_of(html: str) -> dict[str, str]:
    """The hidden fields of the page's first regression form."""
    form = html[html.index('class="inline regression-form"') :]
    form = form[: form.index("</form>")]
    return {name: unescape(value) for name, value in re.findall(r'name="(\w+)" value="([^"]*)"', form)}


def test_the_online_page_button_writes_the_regression_and_names_the_file_and_eval(
    project: tuple[Path, str], viewer: TestClient
) -> None:
    root, trace_id = project
    fields = form_of(viewer.get("/online").text)
    assert fields["trace"] == trace_id and fields["eval"] == "evals/online.py::helpful"
    answer = viewer.post("/online/regressions", data={**fields, "replay": "recorded"})
    assert answer.status_code == 200
    page = unescape(answer.text)
    name = f"trace_{trace_id[:12]}"
    assert f"{name}, running evals/online.py::helpful (its outcome on the trace: failed)" in re.sub(
        r"<[^>]+>", "", page
    )
    assert f"<code>{root / 'evals' / 'regressions.py'}</code>" in page
    assert "niceeval run evals/regressions.py" in page
    module = (root / "evals" / "regressions.py").read_text()
    assert f'@define_eval(name="{name}", trace="regressions/{trace_id}.json")' in module
    assert (root / "evals" / "regressions" / f"{trace_id}.json").is_file()
    again = viewer.post("/online/regressions", data={**fields, "replay": "recorded"})
    assert again.status_code == 409 and f"already has {name}" in unescape(again.text)


def test_the_trace_page_offers_the_button_with_the_live_replay_first(
    project: tuple[Path, str], viewer: TestClient
) -> None:
    root, trace_id = project
    link = re.search(r'href="(/runs/[^"]+/eval\?[^"]+)"', viewer.get("/online").text)
    assert link is not None
    html = viewer.get(unescape(link.group(1))).text
    assert form_of(html)["trace"] == trace_id
    assert '<option value="live" selected>replay the live agent</option>' in html
    answer = viewer.post("/online/regressions", data=form_of(html) | {"replay": "live"})
    assert answer.status_code == 200 and "the live agent runs on the trace's input" in unescape(answer.text)
    assert ', replay="live")' in (root / "evals" / "regressions.py").read_text()


def test_a_request_without_the_pages_token_or_csrf_is_refused_and_writes_nothing(
    project: tuple[Path, str], viewer: TestClient
) -> None:
    root, _ = project
    fields = form_of(viewer.get("/online").text)
    for forged in ({**fields, "page_token": "guessed"}, {k: v for k, v in fields.items() if k != "page_token"}):
        refused = viewer.post("/online/regressions", data=forged)
        assert refused.status_code == 403 and "did not come from this viewer" in refused.text
    assert viewer.post("/online/regressions", data={**fields, "csrf": "x" * 32}).status_code == 403
    assert viewer.get("/online/regressions", params=fields).status_code == 405  # a GET never writes
    assert not (root / "evals" / "regressions.py").exists()


def test_a_token_from_another_viewer_process_is_refused(project: tuple[Path, str], viewer: TestClient) -> None:
    fields = form_of(viewer.get("/online").text)
    with Store.open(str(project[0] / ".niceeval" / "results.db")) as store:
        client = TestClient(
            create_app(ViewerSettings(store=store, access=Access(None, True))), base_url="http://127.0.0.1:7575"
        )
        client.get("/online")  # its own CSRF cookie; the page token is still the first viewer's
        answer = client.post("/online/regressions", data={**fields, "csrf": client.cookies["niceeval_csrf"]})
    assert answer.status_code == 403


def test_an_unknown_trace_and_an_unwritable_module_say_so_and_write_nothing(
    project: tuple[Path, str], viewer: TestClient
) -> None:
    root, trace_id = project
    fields = form_of(viewer.get("/online").text)
    unknown = viewer.post("/online/regressions", data={**fields, "trace": "0" * 32})
    assert unknown.status_code == 404
    assert f"no stored online result of trace {'0' * 32}" in unescape(unknown.text)
    assert viewer.post("/online/regressions", data={**fields, "trace": "../../etc"}).status_code == 400
    (root / "evals" / "regressions.py").mkdir()  # a folder where the module should be
    blocked = viewer.post("/online/regressions", data={**fields, "replay": "recorded"})
    assert blocked.status_code == 409
    assert f"cannot write the regression of trace {trace_id}: Is a directory" in unescape(blocked.text)
    assert "Nothing was written." in blocked.text
