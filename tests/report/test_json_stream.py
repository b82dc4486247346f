"""The JSON report written as evals finish: an eval's entry goes out when the suite says it is done, the evals
not done follow at the end in plan order, and the document is the one a report written at the end would be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from niceeval._core.results import RunResult
from niceeval._core.summary import EvalTally, PlannedEval, SuiteSummary
from niceeval.report import JsonReporter, ReporterSet


def run(eval_id: str, outcome: str, index: int = 0) -> RunResult:
    return RunResult.model_validate(
        dict(eval_id=eval_id, file="evals/x.py", line=1, run_index=index, outcome=outcome, duration_s=0.5)
    )


def suite(reporter: JsonReporter | ReporterSet, runs: list[RunResult], ids: list[str], *, tell: bool) -> None:
    """Drive `reporter` as the suite does: each run, then (with `tell`) its eval when that was its last run."""
    plan = [PlannedEval(id=i, file="evals/x.py", line=1, runs=2) for i in ids]
    tallies = {p.id: EvalTally(eval=p) for p in plan}
    summary = SuiteSummary.of(list(tallies.values()), problems=[], duration_s=1.0, strict=False, min_pass_rate=1.0)
    reporter.start(plan, [])
    for one in runs:
        tally = tallies[one.eval_id]
        tally.add(one)
        reporter.run_finished(one)
        if tell and tally.done == tally.eval.runs:
            reporter.eval_finished(tally, summary)
    reporter.finish(summary)


RUNS = [
    run("b", "passed", 1),
    run("c", "failed", 0),
    run("b", "passed", 0),  # b is done
    run("a", "passed", 0),
    run("c", "passed", 1),  # c is done; a never gets its second run (interrupted)
]


def test_evals_are_written_in_the_order_they_finished_then_the_rest_in_plan_order(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    reporter = JsonReporter(path)
    suite(reporter, RUNS, ["a", "b", "c", "d"], tell=True)
    doc = json.loads(path.read_text())
    assert [e["id"] for e in doc["evals"]] == ["b", "c", "a", "d"]
    by_id = {e["id"]: e for e in doc["evals"]}
    assert [r["run_index"] for r in by_id["b"]["runs"]] == [0, 1]
    assert [r["outcome"] for r in by_id["c"]["runs"]] == ["failed", "passed"]
    assert (by_id["c"]["status"], by_id["c"]["pass_rate"]) == ("failed", 0.5)
    assert [r["run_index"] for r in by_id["a"]["runs"]] == [0] and by_id["d"]["runs"] == []
    assert by_id["d"]["status"] is None
    assert reporter._offsets.keys() == {"a"}  # a done eval's runs are forgotten; only a's were left to read


def test_the_streamed_document_holds_what_one_written_at_the_end_holds(tmp_path: Path) -> None:
    streamed, at_end = tmp_path / "streamed.json", tmp_path / "end.json"
    suite(JsonReporter(streamed), RUNS, ["a", "b", "c", "d"], tell=True)
    suite(JsonReporter(at_end), RUNS, ["a", "b", "c", "d"], tell=False)
    one, other = json.loads(streamed.read_text()), json.loads(at_end.read_text())
    assert [e["id"] for e in other["evals"]] == ["a", "b", "c", "d"]  # without the suite's word: plan order
    for doc in (one, other):
        for key in ("started_at", "finished_at"):
            doc.pop(key)
    assert one["summary"] == other["summary"]
    assert sorted(one["evals"], key=lambda e: e["id"]) == other["evals"]


def test_a_reporter_failing_on_an_eval_misses_it_and_still_writes_its_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    class Broken(JsonReporter):
        def eval_finished(self, tally: EvalTally, summary: SuiteSummary) -> None:
            raise RuntimeError("disk full")

    path = tmp_path / "report.json"
    suite(ReporterSet([Broken(path)]), RUNS, ["a", "b", "c"], tell=True)
    err = capsys.readouterr().err
    assert "reporter Broken failed on an eval and left it out: RuntimeError: disk full" in err
    assert "reporter Broken left out 2 eval(s) it failed on (see above)" in err
    # never told an eval was written: every eval is written at the end, in plan order
    assert [e["id"] for e in json.loads(path.read_text())["evals"]] == ["a", "b", "c"]


IN_ORDER = [run("a", "passed", 1), run("a", "failed", 0), run("b", "passed", 0), run("b", "passed", 1)]


def test_an_eval_whose_runs_come_one_after_another_is_never_spooled(tmp_path: Path) -> None:
    reporter = JsonReporter(tmp_path / "report.json")
    plan = [PlannedEval(id=i, file="evals/x.py", line=1, runs=2) for i in ("a", "b")]
    tallies = {p.id: EvalTally(eval=p) for p in plan}
    summary = SuiteSummary.of(list(tallies.values()), problems=[], duration_s=1.0, strict=False, min_pass_rate=1.0)
    reporter.start(plan, [])
    for one in IN_ORDER:
        tallies[one.eval_id].add(one)
        reporter.run_finished(one)
        if tallies[one.eval_id].done == 2:
            reporter.eval_finished(tallies[one.eval_id], summary)
    assert reporter._spool is not None and reporter._spool.seek(0, 2) == 0  # held in memory, then written
    assert reporter._held == [] and reporter._offsets == {}
    reporter.finish(summary)


def test_held_and_spooled_runs_give_the_same_document(tmp_path: Path) -> None:
    """Runs that come one eval after another (held) and interleaved ones (spooled): the same entries, in run order."""
    held, spooled = tmp_path / "held.json", tmp_path / "spooled.json"
    suite(JsonReporter(held), IN_ORDER, ["a", "b"], tell=True)
    interleaved = [IN_ORDER[0], IN_ORDER[2], IN_ORDER[1], IN_ORDER[3]]
    suite(JsonReporter(spooled), interleaved, ["a", "b"], tell=True)
    one, other = held.read_bytes(), spooled.read_bytes()
    assert one[one.index(b'"evals"') :] == other[other.index(b'"evals"') :]
    doc = json.loads(one)
    assert [(e["id"], [r["run_index"] for r in e["runs"]]) for e in doc["evals"]] == [("a", [0, 1]), ("b", [0, 1])]
    assert [r["outcome"] for r in doc["evals"][0]["runs"]] == ["failed", "passed"]
    assert one.endswith(b"]}\n")


def _dumped_entry(planned: PlannedEval, tally: EvalTally, summary: SuiteSummary) -> str:
    """An eval's entry's figures as `json.dumps` writes its dict (the report's format, pinned), before its runs."""
    from niceeval._core.passk import pass_at_k, pass_hat_k
    from niceeval._core.text import without_surrogates
    from niceeval.render import runs_rate

    strict, counted = summary.strict, tally.counted
    passing = tally.passing(strict=strict)
    estimate = runs_rate(passing, counted)
    interval = None if estimate.low is None else {"low": estimate.low, "high": estimate.high, "confidence": 0.95}
    p50, p95 = tally.latency(0.5), tally.latency(0.95)
    item = {
        "id": without_surrogates(planned.id), "file": without_surrogates(planned.file), "line": planned.line,
        "tags": [without_surrogates(tag) for tag in planned.tags],
        "status": summary.status_of(tally) if tally.done else None, "pass_rate": tally.pass_rate(strict=strict),
        "not_counted": {"infra": tally.infra}, "pass_rate_interval": interval,
        "pass_at_k": {str(k): round(pass_at_k(counted, passing, k), 6) for k in range(1, counted + 1)},
        "pass_hat_k": {str(k): round(pass_hat_k(counted, passing, k), 6) for k in range(1, counted + 1)},
        "mean_duration_s": round(tally.mean_duration_s, 6), "latency_p50_s": None if p50 is None else round(p50, 6),
        "latency_p95_s": None if p95 is None else round(p95, 6),
        "points": None if tally.points_possible is None else json.loads(json.dumps(_points_of(tally))),
    }  # fmt: skip
    return json.dumps(item)[:-1] + ', "runs": ['


def _points_of(tally: EvalTally) -> object:
    from niceeval.render import estimate_json, eval_points

    return {"possible": tally.points_possible, "earned": tally.points_earned, "mean": estimate_json(eval_points(tally))}


@pytest.mark.parametrize(
    ("duration", "outcomes", "points"),
    [
        (0.5, ["passed", "failed", "scored"], None),
        (float("inf"), ["failed"], None),
        (float("nan"), ["skipped", "skipped"], None),
        (1 / 3, ["scored", "passed"], 2.0),
        (0.0, [], None),
    ],
)
def test_an_entry_is_written_as_json_dumps_writes_its_figures(
    tmp_path: Path, duration: float, outcomes: list[str], points: float | None
) -> None:
    planned = PlannedEval(id='evals/é.py::"odd"\u2028\ud83d', file="evals/é.py", line=7, tags=("t1", "ü\x00"), runs=3)
    tally = EvalTally(eval=planned)
    for index, outcome in enumerate(outcomes):
        fields = dict(eval_id=planned.id, file="evals/x.py", line=1, run_index=index, outcome=outcome,
                      duration_s=duration, points=points and index, points_possible=points)  # fmt: skip
        tally.add(RunResult.model_validate(fields))
    summary = SuiteSummary.of([tally], problems=[], duration_s=1.0, strict=False, min_pass_rate=0.5)
    reporter = JsonReporter(tmp_path / "r.json")
    reporter.start([planned], [])
    entry = reporter._entry(planned, tally, summary).decode()
    reporter.finish(summary)
    assert entry == _dumped_entry(planned, tally, summary) + "]}"
    assert entry.isascii()
