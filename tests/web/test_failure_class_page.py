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
    from niceeval.web._runs import runs_pass_rate

    rate = runs_pass_rate(detail)  # over y (failed) and z (passed): x's only run failed for infra
    assert (rate.value, rate.clusters) == (0.5, 2)
