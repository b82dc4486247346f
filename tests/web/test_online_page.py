"""`/online`: each online assertion's rate per day with its interval, the alarms that fired, the failing traces."""

from __future__ import annotations

from html import unescape

from _stored import check, record, result
from starlette.testclient import TestClient
from test_pages import rows

from niceeval.store import Store


def online(eval_id: str, trace_id: str, state: str, *, warnings: list[str] | None = None) -> object:
    run = result(eval_id, "failed" if state == "failed" else "passed", assertions=[check("includes('refund')", state)])
    return run.model_copy(update={"case_id": trace_id, "warnings": warnings or []})


def test_the_online_page_shows_rates_with_intervals_alarms_and_failing_traces(
    store: Store, browser: TestClient
) -> None:
    record(store, [result("evals/a.py::offline")])  # a run of `niceeval run`: not shown here
    alarm = "ALARM includes:helpful>=0.9: the mean is 0.000 over 3 score(s)"
    traces = [("a" * 32, "passed"), ("b" * 32, "failed"), ("c" * 32, "passed"), ("d" * 32, "inconclusive")]
    runs = [
        online(
            "evals/online.py::helpful", trace_id, state, warnings=[alarm] if trace_id[0] == "b" else None
        ).model_copy(update={"run_index": index})  # type: ignore[attr-defined]
        for index, (trace_id, state) in enumerate(traces)
    ]
    day = record(store, runs, kind="online")  # type: ignore[arg-type]
    page = browser.get("/online")
    assert page.status_code == 200
    html = page.text
    (assertion,) = [unescape(row) for row in rows(html, "online-assertions")]
    assert assertion.startswith("evals/online.py::helpful includes('refund') 2 / 3 66.7% 20.8–93.9% ")
    assert f"({day[:8]}): 67%" in assertion  # the day's point on the trend
    assert unescape(rows(html, "online-alarms")[0]).endswith(f"{alarm} {'b' * 16}")
    (failing,) = rows(html, "online-failing")  # the inconclusive trace passed
    button = "replay the live agent score the recorded trace Make regression case"
    assert failing.endswith(f"evals/online.py::helpful {'b' * 32} {button}")
    assert f'href="/runs/{day}/eval?id=evals%2Fonline.py%3A%3Ahelpful&amp;run=1"' in html


def test_without_online_results_the_page_says_how_to_get_them(store: Store, browser: TestClient) -> None:
    assert "Declare an eval with <code>@define_eval(online=True)</code>" in browser.get("/online").text
