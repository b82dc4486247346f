"""The HTML report of a large suite: the first `most_evals` failed evals and as many others in full, every other
failed eval named with its first miss, the rest counted in a line that says where to read them; a stored run's page
(`niceeval report --html`) is the page the run wrote, its runs read in full only for the evals it lists."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from test_html_report import Node, parse

from niceeval._core.assertion import AssertionResult, JudgeCall
from niceeval._core.errors import ErrorInfo
from niceeval._core.events import MessageEvent
from niceeval._core.results import RunResult, Spend
from niceeval._core.suite_totals import SuiteTotals
from niceeval._core.summary import EvalTally, PlannedEval, SuiteSummary
from niceeval.cli._views import export_reports
from niceeval.report.html import MOST_EVALS, HtmlReporter
from niceeval.store import Store, SuiteRunStart
from niceeval.store._recorder import Recorder, SuiteEnd


def missed(name: str = "includes('x')") -> AssertionResult:
    return AssertionResult(name=name, severity="gate", score=0.0, threshold=1.0, state="failed", reason="nope",
                           location="evals/x.py:3")  # fmt: skip


def judge_said_fail() -> AssertionResult:
    """A judge's failing verdict: its words read the judge call (`judge said fail`), which a light run lacks."""
    call = JudgeCall(model="openai/judge", messages=[{"role": "user", "content": "polite?"}], score=0.2, passed=False,
                     reason="Rude.", input_tokens=10, output_tokens=5, cost=0.001)  # fmt: skip
    return AssertionResult(name="rubric('polite')", severity="gate", score=0.2, threshold=0.7, state="failed",
                           reason="Rude.", location="evals/x.py:9", judge_calls=[call])  # fmt: skip


def run(eval_id: str, outcome: str, *, assertions: list[AssertionResult] | None = None, **fields: object) -> RunResult:
    judged = sum(len(a.judge_calls) for a in assertions or [])
    return RunResult.model_validate(
        dict(eval_id=eval_id, file="evals/x.py", line=1, outcome=outcome, duration_s=0.5,
             assertions=assertions or [], events=[MessageEvent(role="assistant", text=f"reply of {eval_id}")],
             judge_spend=Spend(calls=judged, tokens=15 * judged, cost=0.001 * judged), **fields)
    )  # fmt: skip


def write(path: Path, runs: list[RunResult], *, most_evals: int, run_id: str | None = "abc123def456") -> Node:
    """Drive the reporter as a suite does: each eval done once its run is in; the plan is the runs' order unless
    they are given out of it (the plan is sorted by id)."""
    plan = sorted((PlannedEval(id=r.eval_id, file="evals/x.py", line=1) for r in runs), key=lambda p: p.id)
    totals = SuiteTotals(strict=False, min_pass_rate=1.0, planned=len(plan))
    summary = SuiteSummary(totals=totals, problems=[], duration_s=1.0)
    reporter = HtmlReporter(path, run_id=run_id, most_evals=most_evals)
    reporter.start(plan, [])
    by_id = {p.id: p for p in plan}
    for result in runs:
        tally = EvalTally(eval=by_id[result.eval_id])
        tally.add(result)
        reporter.run_finished(result)
        reporter.eval_finished(tally, summary)
        totals.add(tally)
    totals.close()
    reporter.finish(summary)
    return parse(path)


def names(rows: list[Node]) -> list[str]:
    return [row.all("td")[1].children[0].text for row in rows]  # type: ignore[union-attr]


def main_index(page: Node) -> list[Node]:
    return page.one("table", "evals").one("tbody").all("tr")


def named_index(page: Node) -> list[Node]:
    return page.one("details", "named-failures").one("tbody").all("tr")


def sections(page: Node) -> list[str]:
    return [s.one(cls="eval-name").text for s in page.all("details", "eval-report")]


def test_past_most_evals_other_failures_are_named_with_their_first_miss_and_the_rest_counted(tmp_path: Path) -> None:
    runs = [run(f"a::f{n}", "failed", assertions=[missed(f"check{n}")]) for n in range(5)]
    runs += [run(f"a::p{n}", "passed") for n in range(5)]
    page = write(tmp_path / "report.html", runs, most_evals=2)
    assert sections(page) == ["a::f0", "a::f1", "a::p0", "a::p1"]
    assert names(main_index(page)) == sections(page)
    named = page.one("details", "named-failures")
    assert "open" not in named.attrs  # a browser lays the long list out only when it is opened
    assert named.one("summary").words == "3 more failed evals, named with their first miss (not shown in full below)"
    assert names(named_index(page)) == ["a::f2", "a::f3", "a::f4"]
    assert [r.one(cls="error-line").words for r in named_index(page)] == [
        "check2: score 0.00 < 1.00", "check3: score 0.00 < 1.00", "check4: score 0.00 < 1.00"
    ]  # fmt: skip
    assert all(r.all("a") == [] for r in named_index(page))  # no section to link to
    assert page.one("p", "not-listed").words == (
        "… 3 more evals not listed (3 passed): niceeval show abc123def456 prints every one, niceeval view browses "
        "them, niceeval report abc123def456 --json PATH writes them all."
    )
    assert page.one("p", "capped").words == (
        "This page shows the first 2 failed evals and the first 2 others to finish in full; 3 more failed evals are "
        "named in the index with their first miss: niceeval show abc123def456 EVAL_ID prints one in full, niceeval "
        "view browses them, niceeval report abc123def456 --json PATH writes them all."
    )
    stats = {s.one(cls="label").words: s.one(cls="value").words for s in page.all(cls="stat")}
    assert (stats["Failed"], stats["Passed"]) == ("5", "5")  # the summary counts every eval
    assert [h.words for h in page.all("h2") if h.words.startswith("Evals")] == ["Evals 10"]


def test_without_a_store_the_line_points_to_the_json_report(tmp_path: Path) -> None:
    runs = [run(f"a::p{n}", "passed") for n in range(3)]
    page = write(tmp_path / "report.html", runs, most_evals=1, run_id=None)
    assert page.one("p", "not-listed").words == (
        "… 2 more evals not listed (2 passed): the JSON report (--json PATH) holds every one."
    )
    assert page.all("details", "named-failures") == []


def test_a_page_within_the_bound_lists_every_eval_and_says_nothing_of_a_bound(tmp_path: Path) -> None:
    runs = [run("a::f", "failed", assertions=[missed()]), run("a::p", "passed")]
    page = write(tmp_path / "report.html", runs, most_evals=2)
    assert sections(page) == ["a::f", "a::p"]
    assert page.all("details", "named-failures") == [] and page.all(cls="not-listed") == []
    assert page.all(cls="capped") == []


def test_evals_in_full_keep_plan_order_and_their_anchors_when_they_finish_out_of_order(tmp_path: Path) -> None:
    runs = [run(f"a::{name}", "failed", assertions=[missed()]) for name in ("c", "a", "b")]
    page = write(tmp_path / "report.html", runs, most_evals=5)
    assert sections(page) == ["a::a", "a::b", "a::c"]
    assert [s.attrs["id"] for s in page.all("details", "eval-report")] == ["eval-1", "eval-2", "eval-3"]
    assert [row.one("a").attrs["href"] for row in main_index(page)] == ["#eval-1", "#eval-2", "#eval-3"]


def test_the_page_stays_the_size_of_what_it_shows_as_the_suite_grows(tmp_path: Path) -> None:
    def size(evals: int) -> int:
        runs = [run(f"a::p{n:05d}", "passed") for n in range(evals)]
        write(tmp_path / f"{evals}.html", runs, most_evals=20)
        return (tmp_path / f"{evals}.html").stat().st_size

    small, large = size(100), size(2_000)
    assert large < small * 1.01, (small, large)


def test_a_named_failure_shows_hostile_text_as_text(tmp_path: Path) -> None:
    hostile = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    runs = [run("a::first", "failed", assertions=[missed()])]
    runs.append(run(f"a::{hostile}", "failed", error=ErrorInfo(type="KeyError", message=hostile)))
    page = write(tmp_path / "report.html", runs, most_evals=1)
    (row,) = named_index(page)
    assert row.one(cls="error-line").words == f"KeyError: {hostile}"
    assert page.all("script") == [] and page.all("img") == []


def test_a_bound_under_one_is_refused_with_what_to_give(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="most_evals is 0: give 1 or more"):
        HtmlReporter(tmp_path / "report.html", most_evals=0)


def store_run(store: Store, runs: list[RunResult]) -> str:
    """The runs stored as one finished suite run, in their order (the order they finished)."""
    run_id = uuid.uuid4().hex[:12]
    plan = [PlannedEval(id=r.eval_id, file="evals/x.py", line=1) for r in sorted(runs, key=lambda r: r.eval_id)]
    recorder = Recorder.of(store)
    try:
        recorder.begin(SuiteRunStart(id=run_id, command=["niceeval", "run"]), plan)
        recorder.add(run_id, runs)
        recorder.finish(run_id, SuiteEnd(status="finished", exit_code=1, duration_s=1.0))
    finally:
        recorder.close()
    return run_id


def test_a_stored_runs_page_lists_what_the_run_wrote(store_url: str, tmp_path: Path) -> None:
    """Past the bound, on SQLite and PostgreSQL: the same evals in full in the same order, the same named failures
    with the same first misses (a judge's verdict read from its stored call), the same counts and judge calls."""
    failing = MOST_EVALS + 20
    runs = [
        run(f"a::f{n:04d}", "failed", assertions=[judge_said_fail() if n % 2 else missed()])
        if n % 3
        else run(f"a::f{n:04d}", "failed", error=ErrorInfo(type="KeyError", message="'id'"))
        for n in range(failing)
    ]
    runs += [run(f"a::p{n:04d}", "passed") for n in range(MOST_EVALS + 5)]
    runs.reverse()  # finished out of plan order
    live = write(tmp_path / "live.html", runs, most_evals=MOST_EVALS, run_id="r")
    with Store.open(store_url) as store:
        run_id = store_run(store, runs)
        export_reports(store, run_id, json_path=None, junit_path=None, html_path=tmp_path / "stored.html")
    stored = parse(tmp_path / "stored.html")
    assert sections(stored) == sections(live) and len(sections(stored)) == 2 * MOST_EVALS
    assert [r.words for r in main_index(stored)] == [r.words for r in main_index(live)]
    assert [r.words for r in named_index(stored)] == [r.words for r in named_index(live)]
    assert len(named_index(stored)) == 20
    assert any("judge said fail" in r.words for r in named_index(stored))
    assert stored.one("p", "not-listed").words.startswith("… 5 more evals not listed (5 passed)")
    judges = [
        p.words for page in (stored, live) for p in page.all("section", "panel") if p.one("h2").words == "Judge calls"
    ]
    assert judges[0] == judges[1] and judges[0].startswith("Judge calls openai/judge173 calls 2,595 tokens")


def test_with_runs_n_an_eval_that_fails_late_past_the_others_bound_shows_every_run(tmp_path: Path) -> None:
    """The others are full once `a::p` is done; `a::late` passes its first run (not rendered if it could not fail)
    and fails its second: it is shown in full with both runs; `a::more` fails once the failures are full too."""
    path = tmp_path / "report.html"
    plan = [PlannedEval(id=i, file="evals/x.py", line=1, runs=2) for i in ("a::p", "a::late", "a::more")]
    totals = SuiteTotals(strict=False, min_pass_rate=1.0, planned=len(plan))
    summary = SuiteSummary(totals=totals, problems=[], duration_s=1.0)
    reporter = HtmlReporter(path, run_id="abc123def456", most_evals=1)
    reporter.start(plan, [])
    outcomes = {"a::p": ("passed", "passed"), "a::late": ("passed", "failed"), "a::more": ("passed", "failed")}
    for planned in plan:
        tally = EvalTally(eval=planned)
        for index, outcome in enumerate(outcomes[planned.id]):
            result = run(planned.id, outcome, run_index=index, assertions=[missed()] if outcome == "failed" else None)
            tally.add(result)
            reporter.run_finished(result)
        reporter.eval_finished(tally, summary)
        totals.add(tally)
    totals.close()
    reporter.finish(summary)
    page = parse(path)
    assert sections(page) == ["a::late", "a::p"]
    late = page.all("details", "eval-report")[0]
    assert [r.one("summary").words.split()[:4] for r in late.all("details", "run-report")] == [
        ["passed", "Run", "1", "of"], ["failed", "Run", "2", "of"]
    ]  # fmt: skip
    assert names(named_index(page)) == ["a::more"]
    assert named_index(page)[0].one(cls="error-line").words == "includes('x'): score 0.00 < 1.00"


def test_a_failure_done_after_the_others_are_full_is_shown_with_its_run(tmp_path: Path) -> None:
    runs = [run("a::p", "passed"), run("a::q", "passed"), run("a::f", "failed", assertions=[missed("late check")])]
    page = write(tmp_path / "report.html", runs, most_evals=1)
    assert sections(page) == ["a::f", "a::p"]
    failed = page.all("details", "eval-report")[0]
    assert failed.one("details", "assertion").one("summary").words.startswith("failed late check gate")
