"""The run page over the tallies a suite run keeps when it closes: pages, sorts, filters and bad input, on SQLite and
PostgreSQL; a running suite run (no tallies yet) lists the same lines."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from _stored import ErrorInfo, result
from starlette.testclient import TestClient

from niceeval._core.assertion import AssertionResult
from niceeval._core.results import RunResult, Spend
from niceeval._core.summary import PlannedEval
from niceeval.attacks import RESISTED
from niceeval.store import Store, SuiteRunStart
from niceeval.store._recorder import Recorder, SuiteEnd
from niceeval.store.tables import eval_tallies, suite_tallies
from niceeval.web import Access, ViewerSettings, create_app
from niceeval.web._queries import attack_verdicts_query

PER_PAGE = 200


@pytest.fixture
def opened(store_url: str) -> Iterator[Store]:
    with Store.open(store_url) as store:
        yield store


@pytest.fixture
def viewer(opened: Store) -> TestClient:
    return TestClient(create_app(ViewerSettings(store=opened, access=Access(token=None, loopback=True))),
                      base_url="http://127.0.0.1:7575")  # fmt: skip


def ids(html: str) -> list[str]:
    """The eval ids of the run page's lines, in order."""
    body = html.split('<table class="data evals">', 1)[1].split("</table>", 1)[0] if "data evals" in html else ""
    return re.findall(r'eval\?id=[^"]*">([^<]+)</a>', body)


def begin(store: Store, results: Sequence[RunResult], *, strict: bool = False, min_pass_rate: float = 1.0,
          tags: dict[str, list[str]] | None = None) -> tuple[Recorder, str]:  # fmt: skip
    """A suite run recorded and its runs stored, still `running`."""
    run_id = uuid.uuid4().hex[:12]
    plan: dict[str, PlannedEval] = {}
    for r in results:
        runs = 1 + max(x.run_index for x in results if x.eval_id == r.eval_id)
        plan.setdefault(r.eval_id, PlannedEval(id=r.eval_id, file=r.file, line=r.line, runs=runs,
                                               tags=tuple((tags or {}).get(r.eval_id, []))))  # fmt: skip
    recorder = Recorder.of(store)
    start = SuiteRunStart(id=run_id, command=["niceeval", "run"], strict=strict, min_pass_rate=min_pass_rate)
    recorder.begin(start, list(plan.values()))
    recorder.add(run_id, list(results))
    return recorder, run_id


def finish(recorder: Recorder, run_id: str) -> None:
    recorder.finish(run_id, SuiteEnd(status="finished", exit_code=1, duration_s=1.0))
    recorder.close()


def stored(store: Store, results: Sequence[RunResult], **options: object) -> str:
    recorder, run_id = begin(store, results, **options)  # type: ignore[arg-type]
    finish(recorder, run_id)
    return run_id


def many(count: int) -> list[RunResult]:
    """`count` evals, one run each: every seventh failed, every fifth scored, durations and costs varying."""
    found = []
    for n in range(count):
        outcome = "failed" if n % 7 == 0 else "scored" if n % 5 == 0 else "passed"
        found.append(result(f"evals/a.py::case_{n:04d}", outcome, duration_s=(n * 37 % 101) / 10))  # type: ignore[arg-type]
    return found


def test_a_page_past_the_last_shows_the_last_page(opened: Store, viewer: TestClient) -> None:
    run = stored(opened, many(450))
    html = viewer.get(f"/runs/{run}?page=10000").text
    listed = ids(html)
    assert len(listed) == 50 and "page 3 of 3" in html and "Next →" not in html
    assert listed == ids(viewer.get(f"/runs/{run}?page=3").text)
    small = stored(opened, many(10))
    assert len(ids(viewer.get(f"/runs/{small}?page=10000").text)) == 10


def test_pages_hold_every_eval_once_failures_first_then_plan_order(opened: Store, viewer: TestClient) -> None:
    run = stored(opened, many(450))
    listed = [i for page in (1, 2, 3) for i in ids(viewer.get(f"/runs/{run}?page={page}").text)]
    failed = [f"evals/a.py::case_{n:04d}" for n in range(450) if n % 7 == 0]
    scored = [f"evals/a.py::case_{n:04d}" for n in range(450) if n % 7 and n % 5 == 0]
    assert listed[: len(failed)] == failed and listed[len(failed) : len(failed) + len(scored)] == scored
    assert sorted(listed) == sorted(f"evals/a.py::case_{n:04d}" for n in range(450))


def test_sorts_by_duration_eval_and_cost_with_an_unknown_cost_last(opened: Store, viewer: TestClient) -> None:
    results = many(30)
    results[3] = results[3].model_copy(update={"agent_spend": Spend(calls=1, tokens=5, cost=None)})
    run = stored(opened, results)
    by_duration = ids(viewer.get(f"/runs/{run}?sort=duration&order=desc").text)
    durations = {r.eval_id: r.duration_s for r in results}
    assert [durations[i] for i in by_duration] == sorted(durations.values(), reverse=True)
    assert ids(viewer.get(f"/runs/{run}?sort=eval&order=desc").text) == sorted(durations, reverse=True)
    for order in ("asc", "desc"):
        assert ids(viewer.get(f"/runs/{run}?sort=cost&order={order}").text)[-1] == "evals/a.py::case_0003"


def test_filters_combine_and_text_is_matched_literally(opened: Store, viewer: TestClient) -> None:
    results = [result("evals/a.py::refund_100%"), result("evals/a.py::refund_1000", "failed"),
               result("evals/b.py::search", "failed"), result("evals/b.py::REFUND_x")]  # fmt: skip
    run = stored(
        opened, results, tags={"evals/a.py::refund_1000": ["billing"], "evals/b.py::search": ["billing", "slow"]}
    )
    assert ids(viewer.get(f"/runs/{run}?q=100%25").text) == ["evals/a.py::refund_100%"]
    assert ids(viewer.get(f"/runs/{run}?q=_1").text) == ["evals/a.py::refund_1000", "evals/a.py::refund_100%"]
    assert ids(viewer.get(f"/runs/{run}?q=refund").text) == [
        "evals/a.py::refund_1000", "evals/a.py::refund_100%", "evals/b.py::REFUND_x"
    ]  # fmt: skip
    assert ids(viewer.get(f"/runs/{run}?tag=billing&outcome=failed").text) == [
        "evals/a.py::refund_1000", "evals/b.py::search"
    ]  # fmt: skip
    assert ids(viewer.get(f"/runs/{run}?tag=slow").text) == ["evals/b.py::search"]
    html = viewer.get(f"/runs/{run}?tag=slow&outcome=passed").text
    assert "No eval matches these filters." in html and "Evals <span" in html


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        (
            "sort=price",
            "unknown sort &#39;price&#39;: sort by one of verdict, eval, position, duration, cost, pass_rate",
        ),
        ("order=up", "unknown order &#39;up&#39;: use asc or desc."),
        ("outcome=broken", "unknown outcome &#39;broken&#39;: use one of passed, scored, failed, skipped."),
    ],
)
def test_a_bad_sort_order_or_outcome_is_a_400_naming_what_is_allowed(
    opened: Store, viewer: TestClient, query: str, reason: str
) -> None:
    run = stored(opened, many(3))
    response = viewer.get(f"/runs/{run}?{query}")
    assert response.status_code == 400 and reason in response.text


def test_a_running_run_lists_the_same_lines_as_once_it_closed(opened: Store, viewer: TestClient) -> None:
    crash = ErrorInfo(kind="exception", type="KeyError", message="'id'")
    results = [*many(230), result("evals/a.py::flaky", run_index=0), result("evals/a.py::flaky", "failed", run_index=1),
               result("evals/a.py::crash", "failed", error=crash), result("evals/a.py::skip", "skipped")]  # fmt: skip
    recorder, run = begin(opened, results, min_pass_rate=0.5, tags={"evals/a.py::flaky": ["slow"]})
    queries = ["", "page=2", "sort=duration&order=desc", "outcome=scored", "tag=slow", "q=CASE_01", "sort=pass_rate"]
    running = {q: viewer.get(f"/runs/{run}?{q}").text for q in queries}
    assert "This run is <strong>running</strong>" in running[""]
    finish(recorder, run)
    with opened.engine.connect() as conn:
        kept = conn.execute(eval_tallies.select().where(eval_tallies.c.suite_run_id == run)).mappings().all()
        rate = conn.execute(suite_tallies.select().where(suite_tallies.c.suite_run_id == run)).mappings().one()
    assert len(kept) == 233 and rate["pass_rate"] is not None
    flaky = next(row for row in kept if row["eval_id"] == "evals/a.py::flaky")
    assert (flaky["passing"], flaky["counted"], flaky["verdict"], flaky["tags"]) == (1, 2, "scored", ["slow"])
    for q in queries:
        closed = viewer.get(f"/runs/{run}?{q}").text
        assert ids(closed) == ids(running[q]), q
        assert re.findall(r"<tbody>.*?</tbody>", closed, re.S) == re.findall(r"<tbody>.*?</tbody>", running[q], re.S)


def test_compare_pages_every_eval_the_compared_runs_first_then_the_gone_ones(opened: Store, viewer: TestClient) -> None:
    base = stored(opened, [*many(250), result("evals/z.py::gone_1"), result("evals/z.py::gone_2", "failed")])
    recorder, head = begin(opened, many(300))
    pages = {}
    for page in (1, 2, 3, 10000):
        html = viewer.get(f"/compare?base={base}&head={head}&show=all&page={page}").text
        body = html.split('<table class="data pairs">', 1)[1].split("</table>", 1)[0]
        pages[page] = re.findall(r'<td class="id">([^<]+)</td>', body)
        if page == 10000:
            assert "page 2 of 2" in html and "Next →" not in html
    finish(recorder, head)
    closed = viewer.get(f"/compare?base={base}&head={head}&show=all&page=2").text
    assert pages[10000] == pages[2] and pages[3] == pages[2]
    gone = ["evals/z.py::gone_1", "evals/z.py::gone_2"]
    assert pages[1] + pages[2] == [f"evals/a.py::case_{n:04d}" for n in range(300)] + gone
    assert '<span class="faint">new</span>' in closed and closed.count('<span class="faint">gone</span>') == 2


def test_compare_pages_two_closed_runs_from_their_tallies_in_the_same_order(opened: Store, viewer: TestClient) -> None:
    """Two closed runs are paged in SQL from their kept tallies (not every id of both read): the same pages, the
    head's evals in plan order, then the gone ones, a page split between them, a page past the end the last."""
    gone = [result(f"evals/z.py::gone_{n}", "failed" if n % 2 else "passed") for n in range(150)]
    base = stored(opened, [*many(250)[::-1], *gone])
    head = stored(opened, many(330))
    pages = {}
    for page in (1, 2, 3, 4, 10000):
        html = viewer.get(f"/compare?base={base}&head={head}&show=all&page={page}").text
        body = html.split('<table class="data pairs">', 1)[1].split("</table>", 1)[0]
        pages[page] = re.findall(r'<td class="id">([^<]+)</td>', body)
        assert ("page 3 of 3" in html) == (page >= 3), page
    assert pages[1] + pages[2] + pages[3] == [f"evals/a.py::case_{n:04d}" for n in range(330)] + [
        f"evals/z.py::gone_{n}" for n in range(150)
    ]
    assert pages[4] == pages[10000] == pages[3] and len(pages[2]) == 200 and len(pages[3]) == 80


def test_a_store_from_before_tallies_gets_them_for_its_closed_runs(store_url: str) -> None:
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import inspect

    from niceeval.store._open import _MIGRATIONS

    with Store.open(store_url) as store:
        closed = stored(store, [result("evals/a.py::x"), result("evals/a.py::y", "failed")])
        recorder, running = begin(store, [result("evals/a.py::x")])
        recorder.close()
        with store.engine.begin() as conn:  # back to schema 0010, as an older niceeval left it
            config = Config()
            config.set_main_option("script_location", str(_MIGRATIONS))
            config.attributes["connection"] = conn
            command.downgrade(config, "0010")
        assert "eval_tallies" not in inspect(store.engine).get_table_names()
    with Store.open(store_url) as store, store.engine.connect() as conn:
        kept = conn.execute(eval_tallies.select().order_by(eval_tallies.c.position)).mappings().all()
        rates = dict(conn.execute(suite_tallies.select().with_only_columns(suite_tallies.c.suite_run_id,
                                                                        suite_tallies.c.pass_rate)).all())  # fmt: skip
    assert [(r["suite_run_id"], r["eval_id"], r["verdict"]) for r in kept] == [
        (closed, "evals/a.py::x", "passed"), (closed, "evals/a.py::y", "failed")
    ]  # fmt: skip
    assert rates == {closed: 0.5} and running not in rates


def test_a_running_run_summarises_its_judges_as_once_it_closed(opened: Store, viewer: TestClient) -> None:
    from _stored import check, judged

    results = [
        result("evals/a.py::polite", assertions=[judged("polite", 0.9, "polite", reply="Hi")]),
        result("evals/a.py::rude", "failed", assertions=[judged("polite", 0.2, "rude", reply="Go away")]),
        result("evals/a.py::unjudged", assertions=[check("judge: factual", "inconclusive", severity="soft",
                                                         cause="no_api_key", reason="no key")]),
    ]  # fmt: skip
    recorder, run = begin(opened, results)
    panels = re.compile(r'<div class="columns">.*?</div>\s*\n', re.S)
    running = panels.findall(viewer.get(f"/runs/{run}").text)
    finish(recorder, run)
    closed = panels.findall(viewer.get(f"/runs/{run}").text)
    assert closed == running and "openai/gpt-judge" in closed[0] and "no_api_key" in closed[0]


def test_a_resumed_run_is_folded_while_it_runs_and_kept_anew_when_it_closes(opened: Store, viewer: TestClient) -> None:
    run = stored(opened, [result("evals/a.py::x"), result("evals/a.py::y", "failed")])
    recorder = Recorder.of(opened)
    recorder.extend(run, [PlannedEval(id="evals/a.py::z", file="evals/a.py", line=10)])
    recorder.add(run, [result("evals/a.py::z", "scored")])
    assert ids(viewer.get(f"/runs/{run}").text) == ["evals/a.py::y", "evals/a.py::z", "evals/a.py::x"]
    finish(recorder, run)
    with opened.engine.connect() as conn:
        kept = conn.execute(eval_tallies.select().where(eval_tallies.c.suite_run_id == run)).mappings().all()
        rate = conn.execute(suite_tallies.select().where(suite_tallies.c.suite_run_id == run)).mappings().all()
    assert sorted((r["eval_id"], r["verdict"]) for r in kept) == [
        ("evals/a.py::x", "passed"), ("evals/a.py::y", "failed"), ("evals/a.py::z", "scored")
    ]  # fmt: skip
    assert [r["pass_rate"] for r in rate] == [pytest.approx(2 / 3)]
    assert ids(viewer.get(f"/runs/{run}").text) == ["evals/a.py::y", "evals/a.py::z", "evals/a.py::x"]


def attacked(family: str, n: int, state: str) -> RunResult:
    """An attack run of `family`: its case id names the family, its `resisted attack` verdict is `state`."""
    verdict = AssertionResult(name=RESISTED, severity="gate", score=None, threshold=1.0, state=state)  # type: ignore[arg-type]
    run = result(f"evals/attack.py::resists[{family}-{n}]", "passed" if state == "passed" else "failed",
                 assertions=[verdict])  # fmt: skip
    return run.model_copy(update={"case_id": f"{family}-{n}"})


def test_the_run_page_counts_the_runs_attack_verdicts_and_no_other_runs(opened: Store, viewer: TestClient) -> None:
    plain = stored(opened, many(30))
    states = ("passed", "failed", "passed", "passed")
    attacks = stored(opened, [attacked("instruction_override", n, state) for n, state in enumerate(states)])
    stored(opened, [attacked("data_exfiltration", n, "failed") for n in range(3)])

    table = viewer.get(f"/runs/{attacks}").text.split('<table class="data attacks">', 1)[1].split("</table>", 1)[0]
    cells = re.findall(r'<td class="id">([^<]+)</td><td class="num">(\d+/\d+)</td>', table)
    assert cells == [("overall", "1/4"), ("instruction_override", "1/4")]
    assert "data attacks" not in viewer.get(f"/runs/{plain}").text


def test_attack_verdicts_are_looked_up_by_their_partial_index(tmp_path: Path) -> None:
    """The verdicts' name is in the SQL, so SQLite (like PostgreSQL) can use the partial index that holds them."""
    with Store.open(f"sqlite:///{tmp_path / 'store.db'}") as store:
        run = stored(store, [attacked("instruction_override", 0, "failed"), *many(3)])
        query = attack_verdicts_query(run)
        compiled = query.compile(store.engine, compile_kwargs={"render_postcompile": True})
        assert "'resisted attack'" in str(compiled)
        with store.engine.connect() as conn:
            plan = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}", (run,)).all()
            found = conn.execute(query).all()
    assert any("ix_assertions_resisted" in str(step) for step in plan), plan
    assert found == [("instruction_override-0", None, "failed")]
def flipped(html: str) -> list[str]:
    """The eval ids of the compare page's changes table, in order."""
    body = html.split('<table class="data flips">', 1)[1].split("</table>", 1)[0] if "data flips" in html else ""
    return re.findall(r'<td class="id">([^<]+)</td>', body)


def test_compare_pages_and_sorts_the_changed_evals_on_the_server(opened: Store, viewer: TestClient) -> None:
    base = stored(opened, [result(f"evals/a.py::case_{n:04d}") for n in range(460)])
    head = stored(opened, [result(f"evals/a.py::case_{n:04d}", "failed" if n % 23 else "passed")
                           for n in reversed(range(460))])  # fmt: skip
    expected = [f"evals/a.py::case_{n:04d}" for n in range(460) if n % 23]
    url = f"/compare?base={base}&head={head}"
    first = viewer.get(url).text
    assert 'Changes <span class="faint">440, strongest evidence first' in first and "page 1 of 3" in first
    assert '<div class="label">Within noise</div><div class="value">440</div>' in first
    pages = {page: flipped(viewer.get(f"{url}&page={page}&sort=eval").text) for page in (1, 2, 3, 10000)}
    assert [len(pages[p]) for p in (1, 2, 3)] == [200, 200, 40] and pages[10000] == pages[3]
    assert pages[1] + pages[2] + pages[3] == expected
    assert (
        sorted(flipped(first) + flipped(viewer.get(f"{url}&page=2").text) + flipped(viewer.get(f"{url}&page=3").text))
        == expected
    )
    last = viewer.get(f"{url}&page=10000&sort=change").text
    assert "page 3 of 3" in last and "Next →" not in last and len(flipped(last)) == 40
    every = viewer.get(f"{url}&show=all&sort=eval").text
    assert flipped(every) == expected[:200] and "show changed only" in every


def test_compare_names_the_sorts_it_knows_for_an_unknown_one(opened: Store, viewer: TestClient) -> None:
    base = stored(opened, many(3))
    head = stored(opened, many(3))
    response = viewer.get(f"/compare?base={base}&head={head}&sort=cost")
    assert response.status_code == 400
    assert "unknown sort &#39;cost&#39;: use one of evidence, eval, change." in response.text
