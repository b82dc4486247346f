"""The compare page of a large pair of runs answers at once: its diff is computed by the viewer's background worker
while the page says so and refreshes itself, then shown (and kept, for two closed runs); a small pair's is
computed in the request as before."""

from __future__ import annotations

import random
import re
import sqlite3
import sys
import threading
import time

from _stored import record, result
from sqlalchemy import event
from starlette.testclient import TestClient

from niceeval.store import DiffOptions, Store, SuiteRunStart
from niceeval.store._recorder import Recorder
from niceeval.web import Access, ViewerSettings, create_app
from niceeval.web._diffs import COMPUTING_SWITCH_S

COMPUTING = "Computing the diff of"
REFRESH = '<meta http-equiv="refresh" content="2">'
FLIPS = '<table class="data flips">'


def viewer(store: Store, *, inline_diff_evals: int) -> TestClient:
    settings = ViewerSettings(
        store=store, access=Access(token=None, loopback=True), inline_diff_evals=inline_diff_evals
    )
    return TestClient(create_app(settings), base_url="http://127.0.0.1:7575")


def runs(store: Store, evals: int = 40, *, head_status: str = "finished") -> tuple[str, str]:
    """A baseline where every eval passes, and a later run where every third fails."""
    picked = random.Random(7)
    base = record(store, [result(f"evals/a.py::case_{n:03d}") for n in range(evals)])
    failing = {n for n in range(evals) if n % 3 == 0 or picked.random() < 0.1}
    head_results = [result(f"evals/a.py::case_{n:03d}", "failed" if n in failing else "passed") for n in range(evals)]
    if head_status == "finished":
        return base, record(store, head_results)
    recorder = Recorder.of(store)
    try:
        recorder.begin(SuiteRunStart(id="live", command=["niceeval", "run"]), store.planned(base))
        recorder.add("live", head_results)
    finally:
        recorder.close()
    return base, "live"


def until_shown(client: TestClient, url: str, *, seconds: float = 60.0) -> tuple[int, str]:
    """Ask for `url` as its refreshing page would, until it shows something other than the computing note."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        response = client.get(url)
        if COMPUTING not in response.text:
            return response.status_code, response.text
        time.sleep(0.05)
    raise AssertionError(f"{url} was still computing after {seconds} s")


def flip_rows(html: str) -> list[str]:
    body = html.split(FLIPS, 1)[1].split("</table>", 1)[0]
    return [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", "<tr" + row)).strip() for row in body.split("<tr")[2:]]


def test_a_large_pair_answers_at_once_that_it_is_computing_then_shows_the_diff_and_keeps_it(store: Store) -> None:
    base, head = runs(store)
    url = f"/compare?base={base}&head={head}"
    client = viewer(store, inline_diff_evals=10)
    first = client.get(url)
    assert first.status_code == 200 and FLIPS not in first.text
    assert f"{COMPUTING} {base} (40 evals) and {head} (40 evals)" in first.text
    assert REFRESH in first.text and "<script>" not in first.text.split("<main>")[1]
    status, shown = until_shown(client, url)
    kept = store.kept_diff(base, head, DiffOptions(threshold=0.1))
    assert status == 200 and kept is not None and REFRESH not in shown
    inline = viewer(store, inline_diff_evals=1_000).get(url).text  # a small pair's page, computed in the request
    assert flip_rows(shown) == flip_rows(inline) and len(flip_rows(shown)) == len(kept.changed) > 0
    assert client.get(url).text.count(FLIPS) == 1  # read back from the store from now on


def test_a_kept_diff_of_a_large_pair_is_shown_in_the_first_request(store: Store) -> None:
    base, head = runs(store)
    computed = store.diff(base, head, DiffOptions(threshold=0.1))
    html = viewer(store, inline_diff_evals=10).get(f"/compare?base={base}&head={head}").text
    assert COMPUTING not in html and len(flip_rows(html)) == len(computed.changed)


def test_a_small_pair_is_diffed_in_the_request(store: Store) -> None:
    base, head = runs(store)
    html = viewer(store, inline_diff_evals=40).get(f"/compare?base={base}&head={head}").text
    assert COMPUTING not in html and FLIPS in html


def test_a_large_pair_that_cannot_be_compared_says_why_once_computed(store: Store) -> None:
    base = record(store, [result(f"evals/a.py::x_{n}") for n in range(20)])
    head = record(store, [result(f"evals/b.py::y_{n}") for n in range(20)])
    client = viewer(store, inline_diff_evals=10)
    url = f"/compare?base={base}&head={head}"
    assert COMPUTING in client.get(url).text
    status, shown = until_shown(client, url)
    assert status == 400 and "share no eval with a counted run" in shown and 'name="base"' in shown
    assert store.kept_diff(base, head, DiffOptions(threshold=0.1)) is None


def test_a_running_runs_diff_is_shown_once_then_computed_again(store: Store) -> None:
    base, head = runs(store, head_status="running")
    client = viewer(store, inline_diff_evals=10)
    url = f"/compare?base={base}&head={head}"
    assert COMPUTING in client.get(url).text
    status, shown = until_shown(client, url)
    assert status == 200 and FLIPS in shown
    assert store.kept_diff(base, head, DiffOptions(threshold=0.1)) is None  # a running run's diff is never kept
    assert COMPUTING in client.get(url).text  # it may have changed since: computed again
    assert until_shown(client, url)[0] == 200  # (and the store is closed only once the worker is done with it)


def test_one_worker_thread_computes_every_pair_in_turn(store: Store) -> None:
    pairs = [runs(store, 20 + n) for n in range(3)]
    client = viewer(store, inline_diff_evals=10)
    before = {t for t in threading.enumerate() if t.name == "niceeval-viewer-diffs"}
    for base, head in pairs:
        assert COMPUTING in client.get(f"/compare?base={base}&head={head}").text
    started = {t for t in threading.enumerate() if t.name == "niceeval-viewer-diffs"} - before
    assert len(started) == 1 and all(t.daemon for t in started)
    for base, head in pairs:
        assert until_shown(client, f"/compare?base={base}&head={head}")[0] == 200
        assert store.kept_diff(base, head, DiffOptions(threshold=0.1)) is not None


def test_a_refresh_while_the_worker_computes_asks_the_worker_not_the_store(store: Store) -> None:
    """The refresh shares the interpreter with the worker: it reads no kept diff that cannot be there yet, reads the
    pair on one connection, and the worker hands the interpreter over every half millisecond while it computes (a
    request waits at each query)."""
    base, head = runs(store)
    client = viewer(store, inline_diff_evals=10)
    url = f"/compare?base={base}&head={head}"
    asked: list[str] = []

    def heard(conn: object, cursor: object, statement: str, *args: object) -> None:
        if threading.current_thread().name != "niceeval-viewer-diffs":
            asked.append(statement)

    interval = sys.getswitchinterval()
    writer = sqlite3.connect(str(store.engine.url.database), isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # the worker's diff waits to be kept: its job stays unfinished
    try:
        assert COMPUTING in client.get(url).text
        event.listen(store.engine, "before_cursor_execute", heard)
        try:
            refreshed = client.get(url).text
        finally:
            event.remove(store.engine, "before_cursor_execute", heard)
        assert COMPUTING in refreshed and REFRESH in refreshed
        assert asked and not [s for s in asked if "kept_diffs" in s or "status, suite_runs.finished_at" in s]
        assert asked.count("BEGIN") == 2  # two connections: the runs to pick from, then the pair (was six)
        assert sys.getswitchinterval() == COMPUTING_SWITCH_S  # the worker offers the GIL often while it computes
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert until_shown(client, url)[0] == 200
    assert sys.getswitchinterval() == interval  # and as often as before once done
    assert store.kept_diff(base, head, DiffOptions(threshold=0.1)) is not None
