"""Model output and stored text are shown as text on every page: no markup, no handlers, no script URLs."""

from __future__ import annotations

from _stored import ActionCalledEvent, ErrorInfo, check, judged, record, result, talk
from starlette.testclient import TestClient

from niceeval.store import Store

HOSTILE = (
    '<script>alert("x")</script><img src=x onerror="alert(1)"><a href="javascript:alert(2)">click</a>'
    "</textarea><script>alert(3)</script></pre><svg onload=alert(4)>"
)
ACTIVE = ("<script>alert", "<img src=x", 'href="javascript:', "<svg onload", "</textarea><script")


def hostile_runs(store: Store) -> tuple[str, str, str]:
    eval_id = f"evals/x.py::{HOSTILE}"
    tool = ActionCalledEvent(name=HOSTILE, input={"q": HOSTILE}, output=HOSTILE, error=HOSTILE, status="failed")
    hostile = result(
        eval_id,
        "failed",
        events=talk((HOSTILE, HOSTILE), tools=[tool]),
        assertions=[check(HOSTILE, "failed", reason=HOSTILE, expected=HOSTILE, actual=HOSTILE, location=HOSTILE),
                    judged(HOSTILE, 0.1, HOSTILE, reply=HOSTILE)],
        error=ErrorInfo(type=HOSTILE, message=HOSTILE, location=HOSTILE, traceback=HOSTILE),
    )  # fmt: skip
    base = record(store, [result(eval_id)], tags={eval_id: [HOSTILE]})
    head = record(store, [hostile], tags={eval_id: [HOSTILE]})
    return base, head, eval_id


def test_hostile_text_is_escaped_on_every_page(store: Store, browser: TestClient) -> None:
    base, head, eval_id = hostile_runs(store)
    params = {"id": eval_id}
    pages = [
        browser.get("/"),
        browser.get(f"/runs/{head}"),
        browser.get(f"/runs/{head}", params={"q": HOSTILE, "tag": HOSTILE}),
        browser.get(f"/runs/{head}/eval", params=params),
        browser.get("/compare", params={"base": base, "head": head, "show": "all"}),
        browser.get("/compare/eval", params={"base": base, "head": head, **params}),
        browser.get("/evals/history", params=params),
        browser.get("/runs/" + HOSTILE.replace("/", "")),
    ]
    for page in pages:
        assert page.status_code in (200, 404), page.url
        for needle in ACTIVE:
            assert needle not in page.text, (page.url, needle)
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in pages[3].text  # shown, as text
