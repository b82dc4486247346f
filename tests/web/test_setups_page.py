"""The setups page: experiments (or suite runs) side by side with their intervals, each pair's relation, the front,
linked from the runs list; bad picks say what to do; hostile names stay text."""

from __future__ import annotations

import re

from _setups import Case, once
from starlette.testclient import TestClient

from niceeval.store import Store


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def three_experiments(store: Store, old: str = "old") -> None:
    once(store, "run-old", [Case(outcome="failed", cost=0.002 + i * 1e-5, turns=(2.0 + i / 100,)) for i in range(12)],
         experiment=old)  # fmt: skip
    once(store, "run-large", [Case(cost=0.003 + i * 1e-5, turns=(0.5 + i / 100,)) for i in range(12)],
         experiment="large")  # fmt: skip
    once(store, "run-mini", [Case(cost=0.001 + i * 1e-5, turns=(1.0 + i / 100,), score=0.5 + i / 30)
                             for i in range(12)], experiment="mini")  # fmt: skip


def test_the_runs_list_links_to_the_setups_page(store: Store, browser: TestClient) -> None:
    three_experiments(store)
    assert 'href="/setups">Compare setups</a>' in browser.get("/").text


def test_by_default_every_recent_experiment_is_compared(store: Store, browser: TestClient) -> None:
    three_experiments(store)
    page = browser.get("/setups")
    assert page.status_code == 200
    shown = text(page.text)  # the latest experiment first
    assert "mini front large front old suite run run-mini" in shown
    assert "pass rate 100% 95% CI 76%-100% 100% 95% CI 76%-100% 0% 95% CI 0%-24%" in shown
    assert "cost per eval run $0.0011 95% CI $0.0010-$0.0011 $0.0031 95% CI $0.0030-$0.0031 $0.0021" in shown
    assert "mean similarity 0.68 95% CI 0.61-0.76 – –" in shown
    assert "old : cost per passed run not estimated: no run passed." in shown
    assert (
        "mini vs old 12 100% → 0% -1.00 (95% -1.00 to -0.66), p=0.000488 (mcnemar) first dominates mini dominates old"
        in shown
    )
    assert "mini vs large 12 100% → 100% +0.00 (95% -0.24 to +0.24), p=1 (mcnemar) a trade-off" in shown
    assert "Front: mini , large ." in shown
    assert page.text.count('class="setup front"') == 2 and page.text.count('class="setup beaten"') == 1
    assert 'href="/compare?base=run-mini&amp;head=run-old">diff</a>' in page.text


def test_suite_runs_can_be_picked_by_id(store: Store, browser: TestClient) -> None:
    three_experiments(store)
    page = browser.get("/setups?setup=run-old&setup=run-mini")
    assert page.status_code == 200
    assert "run-old vs run-mini 12" in text(page.text)


def test_one_setup_asks_for_another(store: Store, browser: TestClient) -> None:
    three_experiments(store)
    assert "Comparing needs two setups" in browser.get("/setups?setup=mini").text


def test_a_bad_pick_says_why_and_is_a_400(store: Store, browser: TestClient) -> None:
    three_experiments(store)
    unknown = browser.get("/setups?setup=mini&setup=nothing")
    assert unknown.status_code == 400
    assert "no suite run &#39;nothing&#39; in the results store" in unknown.text
    twice = browser.get("/setups?setup=mini&setup=run-mini")
    assert twice.status_code == 400 and "both name suite run run-mini" in twice.text
    many = browser.get("/setups?" + "&".join(f"setup=s{i}" for i in range(9)))
    assert many.status_code == 400 and "9 setups picked; compare at most 8 at once." in many.text


def test_hostile_experiment_names_stay_text_in_the_table_and_the_chart(store: Store, browser: TestClient) -> None:
    three_experiments(store, old='<script>alert(1)</script><img src=x onerror="alert(2)">')
    page = browser.get("/setups").text
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    chart = page[page.index("<svg") : page.index("</svg>")]
    assert "&lt;script&gt;" in chart


def test_an_empty_store_asks_for_runs(browser: TestClient) -> None:
    page = browser.get("/setups")
    assert page.status_code == 200 and "Comparing needs two setups" in page.text


def test_a_run_page_names_its_experiment_as_text(store: Store, browser: TestClient) -> None:
    three_experiments(store, old="<b>old</b>")
    assert "· experiment <code>mini</code>" in browser.get("/runs/run-mini").text
    assert "· experiment <code>&lt;b&gt;old&lt;/b&gt;</code>" in browser.get("/runs/run-old").text
