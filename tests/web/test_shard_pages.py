"""A suite run written by shards shows whole in the viewer, and one still missing shards says so."""

from __future__ import annotations

import re

from _stored import result
from starlette.testclient import TestClient

from niceeval._core.summary import PlannedEval
from niceeval.store import Store, SuiteRunStart
from niceeval.store._recorder import Recorder, SuiteEnd

PLAN = [PlannedEval(id=f"evals/a.py::e{i}", file="evals/a.py", line=i + 1) for i in range(3)]


def shard(store: Store, number: int, *, finished: bool = True) -> None:
    """Shard `number` of 3 of suite run gh-7, having stored its one eval run."""
    recorder = Recorder.of(store)
    try:
        recorder.join_shard(SuiteRunStart(id="gh-7"), PLAN, shard=number, count=3, digest="plan")
        recorder.add("gh-7", [result(f"evals/a.py::e{number - 1}")])
        if finished:
            recorder.finish_shard("gh-7", number, SuiteEnd(status="finished", exit_code=0, duration_s=1.0))
    finally:
        recorder.close()


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_a_run_missing_shards_is_marked_on_the_runs_list_and_its_page(store: Store, browser: TestClient) -> None:
    shard(store, 1)
    shard(store, 3, finished=False)
    assert "1 of 3 shards" in text(browser.get("/").text)
    page = text(browser.get("/runs/gh-7").text)
    assert "This run is incomplete : 1 of 3 shards in (missing: shard 2 (not started), shard 3 (running))" in page
    assert "2 of 3 eval runs stored" in page


def test_a_run_whose_shards_all_finished_shows_whole(store: Store, browser: TestClient) -> None:
    for number in (1, 2, 3):
        shard(store, number)
    runs = text(browser.get("/").text)
    assert "finished · 3 shards" in runs and "of 3 shards" not in runs
    page = text(browser.get("/runs/gh-7").text)
    assert "incomplete" not in page and "· 3 shards" in page
    assert all(f"evals/a.py::e{i}" in page for i in range(3))
