"""A failed run's class in the viewer: the eval-run page says it, and an infra run is not in the suite's rate."""

from __future__ import annotations

from _stored import record, result
from starlette.testclient import TestClient

from niceeval._core.errors import ErrorInfo
from niceeval.store import Store


def test_the_eval_run_page_says_why_the_run_failed(store: Store, browser: TestClient) -> None:
    outage = ErrorInfo(type="ProviderError", message="openai/x: HTTP 503", failure="infra")
    down = result("evals/a.py::x", "failed", error=outage).model_copy(update={"failure": "infra", "attempts": 3})
    bug = result("evals/a.py::y", "failed", error=ErrorInfo(type="ValueError", message="bad", failure="eval"))
    run = record(store, [down, bug.model_copy(update={"failure": "eval"}), result("evals/a.py::z", "passed")])
    page = browser.get(f"/runs/{run}/eval?id=evals/a.py::x").text
    assert "Failed for <strong>infra</strong>: the provider, the sandbox or a judge failed this run" in page
    assert "(tried 3 times)" in page
    assert "Failed for <strong>eval</strong>." in browser.get(f"/runs/{run}/eval?id=evals/a.py::y").text
    assert "Failed for" not in browser.get(f"/runs/{run}/eval?id=evals/a.py::z").text
    detail = store.run(run)
    assert [(i.eval_id, i.failure, i.attempts) for i in detail.eval_runs] == [
        ("evals/a.py::x", "infra", 3),
        ("evals/a.py::y", "eval", 1),
        ("evals/a.py::z", None, 1),
    ]
    from niceeval.store.tables import folded_tallies

    with store.engine.connect() as conn:
        rows, rate = folded_tallies(conn, run)  # what the run page shows and keeps when the run closes
    assert (rate.value, rate.clusters) == (0.5, 2)  # over y (failed) and z (passed): x's only run failed for infra
    assert [(row.eval_id, row.failed, row.counted) for row in rows] == [
        ("evals/a.py::x", 1, 0),
        ("evals/a.py::y", 1, 1),
        ("evals/a.py::z", 0, 1),
    ]
    shown = browser.get(f"/runs/{run}").text
    assert '<div class="value" title="the mean of the evals' in shown and "50%" in shown
