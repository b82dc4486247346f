"""Streamed datasets: planning reads a dataset row by row and keeps no case; the plan reads it again when iterated;
-k, --tag and --shard filter the stream; the suite runs from it; a tally's turn durations stay bounded."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from niceeval._core.results import RunResult
from niceeval._core.summary import LATENCY_SAMPLE, EvalTally, LatencySample, PlannedEval, Problem, percentile
from niceeval._run.discovery import EvalEntry, discover
from niceeval._run.plan import EvalStream, expand
from niceeval._run.shard import Shard
from niceeval._run.suite import select
from niceeval.report import ConsoleReporter

from ._helpers import run_project, write

EVAL = """\
from niceeval import define_eval
from niceeval.expect import includes


@define_eval(cases="qa.jsonl", agent=lambda message: message)
def qa(t):
    t.check(t.case["answer"], includes("answer"))
"""


def _rows(root: Path, rows: list[dict[str, object]]) -> None:
    (root / "evals" / "qa.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


def _project(root: Path, size: int) -> None:
    write(root, "evals/qa.py", EVAL)
    rows = [{"id": f"q{i}", "input": f"question {i}", "answer": f"answer {i}"} for i in range(size)]
    _rows(root, [{**row, "tags": ["even"] if i % 2 == 0 else []} for i, row in enumerate(rows)])


def _plan(root: Path) -> EvalStream:
    found = discover(root, ["evals"])
    plan = expand(found.evals, root=root)
    assert plan.errors == []
    return plan.evals


def test_the_plan_counts_its_evals_and_reads_the_dataset_again_at_each_pass(tmp_path: Path) -> None:
    _project(tmp_path, 5)
    evals = _plan(tmp_path)
    assert len(evals) == 5
    assert [e.id for e in evals] == [f"evals/qa.py::qa[q{i}]" for i in range(5)]
    _rows(tmp_path, [{"id": f"q{i}", "input": "changed", "answer": "new"} for i in range(5)])
    # nothing was kept from the planning pass: the next pass sees the file as it is now
    assert {e.case.data["answer"] for e in evals if e.case is not None} == {"new"}


def test_a_dataset_that_no_longer_reads_after_planning_ends_its_stream_with_a_line_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path, 3)
    evals = _plan(tmp_path)
    (tmp_path / "evals" / "qa.jsonl").write_text('{"id": "q0", "input": "a", "answer": "b"}\n[1, 2]\n')
    assert [e.id for e in evals] == ["evals/qa.py::qa[q0]"]
    err = capsys.readouterr().err
    assert "qa.jsonl:2" in err and "the dataset changed after planning; evals/qa.py::qa stops here" in err


def test_bad_rows_are_errors_at_their_line_and_are_not_counted(tmp_path: Path) -> None:
    _project(tmp_path, 3)
    with (tmp_path / "evals" / "qa.jsonl").open("a") as out:
        out.write("{not json\n")
        out.write('{"id": "q9", "input": "x", "answer": "answer 9"}\n')
    plan = expand(discover(tmp_path, ["evals"]).evals, root=tmp_path)
    assert [(e.line, "the other cases ran" in e.message) for e in plan.errors] == [(4, True)]
    assert len(plan.evals) == 4
    assert [e.id for e in plan.evals][-1] == "evals/qa.py::qa[q9]"


def test_keyword_tag_and_shard_filter_the_stream_as_they_would_a_list(tmp_path: Path) -> None:
    _project(tmp_path, 40)
    evals = _plan(tmp_path)
    listed = list(evals)
    by_keyword = select(evals, keyword="q1 or q2")
    assert [e.id for e in by_keyword] == [e.id for e in listed if "q1" in e.id or "q2" in e.id]
    assert len(by_keyword) == 22  # q1, q10-q19, q2, q20-q29
    by_tag = select(evals, tags=["even"])
    assert len(by_tag) == 20 and bool(by_tag)
    assert not select(evals, keyword="nothing_matches")
    shards = [Shard(n, 3).select(evals, 1) for n in (1, 2, 3)]
    ids = [e.id for shard in shards for e in shard]
    assert sorted(ids) == sorted(e.id for e in listed)  # every eval in exactly one shard
    assert [e.id for e in shards[0]] == [e.id for e in Shard(1, 3).select(listed, 1)]
    assert Shard(1, 3).describe(evals, 2) == Shard(1, 3).describe(listed, 2)


def test_a_list_is_a_stream_read_at_each_pass(tmp_path: Path) -> None:
    _project(tmp_path, 2)
    listed = list(_plan(tmp_path))
    stream = EvalStream.of(listed)
    assert EvalStream.of(stream) is stream
    assert [e.id for e in stream] == [e.id for e in stream] == [e.id for e in listed]
    assert len(EvalStream.of(iter(listed))) == 2  # a one-shot iterator is held, so it can be read again


def test_the_suite_runs_a_streamed_dataset_with_selection(tmp_path: Path) -> None:
    _project(tmp_path, 30)
    write(tmp_path, "niceeval.config.py", "from niceeval import define_config\n\nconfig = define_config()\n")
    kept = run_project(tmp_path, tags=["even"])
    assert kept.summary is not None
    assert len(kept.plan) == 15 and len(kept.results) == 15
    assert {r.outcome for r in kept.results} == {"passed"}
    assert kept.summary.exit_code == 0


def test_latencies_are_exact_while_few() -> None:
    values = [random.Random(1).random() for _ in range(10)] + [float(i) for i in range(LATENCY_SAMPLE - 10)]
    sample = LatencySample()
    sample.extend(values)
    assert sample.values == values
    for quantile in (0.5, 0.95):
        assert percentile(sample.values, quantile) == percentile(values, quantile)


def test_past_the_cap_latencies_are_a_bounded_uniform_sample_within_the_documented_accuracy() -> None:
    rng = random.Random(7)
    durations = [rng.expovariate(1.0) for _ in range(200_000)]
    sample = LatencySample()
    sample.extend(durations)
    assert len(sample.values) == LATENCY_SAMPLE and sample.seen == 200_000
    ordered = sorted(durations)
    for quantile, points in ((0.5, 0.031), (0.95, 0.013)):
        estimate = percentile(sample.values, quantile)
        assert estimate is not None
        rank = sum(1 for d in ordered if d <= estimate) / len(ordered)
        assert abs(rank - quantile) <= points
    again = LatencySample()
    again.extend(durations)
    assert again.values == sample.values  # seeded: the same durations give the same figures


def test_a_tally_keeps_at_most_the_sample_of_turn_durations() -> None:
    tally = EvalTally(eval=PlannedEval(id="e", file="e.py", line=1))
    assert tally.latencies == [] and tally.latency(0.5) is None
    tally.add_turns([float(i) for i in range(5 * LATENCY_SAMPLE)])
    assert len(tally.latencies) == LATENCY_SAMPLE
    assert tally.latency(0.5) is not None


def test_the_console_drops_an_eval_once_printed(tmp_path: Path) -> None:
    from io import StringIO

    from rich.console import Console

    _project(tmp_path, 3)
    write(tmp_path, "niceeval.config.py", "from niceeval import define_config\n\nconfig = define_config()\n")
    out = StringIO()
    console = ConsoleReporter(Console(file=out, force_terminal=False, width=200))
    kept = run_project(tmp_path)
    console.start(kept.plan, [])
    for result in kept.results:
        console.run_finished(result)
    assert console._tallies == {}  # printed evals hold nothing
    assert out.getvalue().count(" PASS ") == 3


def test_the_suite_reads_the_planned_evals_twice_once_to_plan_once_to_run(tmp_path: Path) -> None:
    import anyio

    from niceeval._run.execute import ExecOptions
    from niceeval._run.suite import SuiteOptions, run_suite

    from ._helpers import Kept

    _project(tmp_path, 4)
    planned = _plan(tmp_path)
    passes = []

    def read() -> Iterator[EvalEntry]:
        passes.append(1)
        return iter(planned)

    class Results(Kept):
        def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
            self.problems = list(problems)  # the plan is not walked

    kept = Results()
    options = SuiteOptions(concurrency=2, exec=ExecOptions(timeout=30, root=tmp_path, no_cache=True))
    anyio.run(run_suite, EvalStream(read, count=4), [], options, [kept])
    assert len(passes) == 2
    assert sorted(r.eval_id for r in kept.results) == sorted(e.id for e in planned)

    listing = Kept()  # a reporter that walks the plan reads it again: the suite's plan holds no record per eval
    anyio.run(run_suite, EvalStream(read, count=4), [], options, [listing])
    assert len(passes) == 2 + 3
    assert [p.id for p in listing.plan] == [e.id for e in planned]


def test_reporters_look_planned_evals_up_in_the_suites_plan_not_an_index_of_their_own(tmp_path: Path) -> None:
    import tracemalloc
    from io import StringIO

    import anyio
    from rich.console import Console

    from niceeval._core.summary import Plan, plan_index
    from niceeval._run.execute import ExecOptions
    from niceeval._run.suite import SuiteOptions, run_suite
    from niceeval.report import JUnitReporter

    from ._helpers import Kept

    class Given(Kept):
        def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
            super().start(plan, problems)
            self.given = plan
            self.looked: dict[str, PlannedEval | None] = {}

        def run_finished(self, result: RunResult) -> None:
            super().run_finished(result)
            self.looked[result.eval_id] = plan_index(self.given).get(result.eval_id)

    _project(tmp_path, 3)
    given = Given()
    options = SuiteOptions(exec=ExecOptions(timeout=30, root=tmp_path, no_cache=True))
    anyio.run(run_suite, _plan(tmp_path), [], options, [given])
    assert isinstance(given.given, Plan) and plan_index(given.given) is given.given  # the suite's own, shared
    assert given.looked["evals/qa.py::qa[q2]"] == given.plan[2] and len(given.results) == 3  # while it runs
    assert given.given.get("evals/qa.py::qa[q2]") is None  # a done eval's record is not kept
    evals = [PlannedEval(id=f"evals/qa.py::qa[q{i}]", file="evals/qa.py", line=4) for i in range(50_000)]
    by_id = {p.id: p for p in evals}
    plan = Plan(lambda: iter(evals), len(evals), by_id.get)
    console = ConsoleReporter(Console(file=StringIO(), force_terminal=False, width=200))
    junit = JUnitReporter(tmp_path / "junit.xml")
    tracemalloc.start()
    console.start(plan, [])
    junit.start(plan, [])
    grown, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    junit._spool.close()
    assert grown < 50_000  # an index of every eval each was some 2.5 MB at 50,000 evals
    assert (console._planned.get(evals[7].id), junit._planned.get("evals/qa.py::gone")) == (evals[7], None)
    listed = plan_index(evals[:2])  # a reporter started on a plain list (pytest's store, `niceeval view`) indexes it
    assert (len(listed), listed.get(evals[1].id), listed[0], list(listed)) == (2, evals[1], evals[0], evals[:2])


def test_a_tally_counts_outcomes_in_fields_and_holds_no_list_until_a_run_earns_points() -> None:
    import tracemalloc

    evals = [PlannedEval(id=f"evals/qa.py::qa[q{i}]", file="evals/qa.py", line=4) for i in range(20_000)]
    tracemalloc.start()
    tallies = [EvalTally(eval=p) for p in evals]
    for tally in tallies:
        tally.count_run("passed")
        tally.add_points(None, None)
    size, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert size / len(tallies) < 200  # with a dict of its four counts and an empty list each: some 400 bytes
    tally = tallies[0]
    for outcome in ("scored", "failed", "failed", "skipped"):
        tally.count_run(outcome)  # type: ignore[arg-type]
    tally.count_run("failed", "infra")
    assert tally.counts == {"passed": 1, "scored": 1, "failed": 3, "skipped": 1}
    assert (tally.done, tally.counted, tally.infra, tally.passing(strict=False), tally.points_earned) == (
        6,
        4,
        1,
        2,
        [],
    )
    tally.add_points(2.0, 4.0)
    tally.add_points(4.0, 4.0)
    assert (tally.points_earned, tally.points_fractions) == ([2.0, 4.0], [0.5, 1.0])
