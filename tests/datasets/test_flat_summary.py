"""A suite keeps no tally per eval while it runs, and its figures are those taken over every eval's tally.

A dataset's evals (variants of a case sharing its cluster, a coarser `cluster=` key, `--runs 3`, outcomes mixed:
passed, scored under `--min-pass-rate`, failed, errors, skipped, and a score eval) run through the suite; a reporter
keeps every eval's tally as it is done and counts the tallies alive while the suite runs.
"""

from __future__ import annotations

import gc
import json
from collections import Counter
from collections.abc import Sequence

import anyio
import pytest

from niceeval._core.results import RunResult
from niceeval._core.summary import EvalTally, PlannedEval, Problem, SuiteSummary
from niceeval._run.discovery import discover
from niceeval._run.execute import ExecOptions
from niceeval._run.plan import expand
from niceeval._run.suite import SuiteOptions, run_suite
from niceeval.render import (
    estimate_json,
    folded_points,
    folded_power,
    folded_rate,
    suite_points,
    suite_power,
    suite_rate,
)
from niceeval.report import JsonReporter

from ._helpers import Kept, write

EVALS = """\
import itertools
from niceeval import define_eval
from niceeval.expect import equals

turns = itertools.count()


@define_eval(cases="qa.jsonl", agent=lambda message: message, variants={"tone": ["warm", "cold"]}, cluster="doc")
def qa(t):
    kind = t.case["kind"]
    if kind == "skip":
        t.skip("not this one")
    if kind == "error":
        raise RuntimeError("the agent broke")
    if kind == "flaky":
        t.check(next(turns) % 3 != 0, equals(True))
        return
    t.check(kind, equals("pass"))


@define_eval(cases="qa.jsonl", agent=lambda message: message, points=3)
def graded(t):
    t.score(len(t.case["kind"]) % 4, "letters")
"""

KINDS = ("pass", "flaky", "fail", "error", "skip", "pass", "flaky", "pass")


class Alive:
    """Counts the `EvalTally` objects alive after every tenth run (the suite's, and `Kept`'s: subtracted)."""

    def __init__(self, kept: Kept) -> None:
        self.kept = kept
        self.most = 0
        self.runs = 0

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        pass

    def run_finished(self, result: RunResult) -> None:
        self.runs += 1
        if self.runs % 10 == 0:
            alive = sum(1 for o in gc.get_objects() if isinstance(o, EvalTally))
            self.most = max(self.most, alive - len(self.kept.tallies))

    def finish(self, summary: SuiteSummary) -> None:
        pass


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Kept, Alive, dict[str, object]]:
    tmp_path = tmp_path_factory.mktemp("flat")
    write(tmp_path, "evals/qa.py", EVALS)
    rows = [{"id": f"c{i}", "kind": KINDS[i % len(KINDS)], "doc": f"d{i // 3}"} for i in range(60)]
    write(tmp_path, "evals/qa.jsonl", "".join(json.dumps(row) + "\n" for row in rows))
    kept = Kept()
    alive = Alive(kept)
    report = tmp_path / "report.json"
    found = discover(tmp_path, ["evals"])
    plan = expand(found.evals, root=tmp_path)
    assert plan.errors == []
    options = SuiteOptions(runs=3, min_pass_rate=0.5, concurrency=4, exec=ExecOptions(timeout=30, root=tmp_path))
    anyio.run(run_suite, plan.evals, [], options, [kept, alive, JsonReporter(report)])
    return kept, alive, json.loads(report.read_text())


def test_the_suite_holds_a_tally_only_for_the_evals_under_way(ran: tuple[Kept, Alive, dict[str, object]]) -> None:
    kept, alive, _ = ran
    assert len(kept.tallies) == 180 and alive.runs == 540
    assert alive.most <= 12  # 4 workers, the variants of a case waiting for each other: not the 180 evals


def test_the_folded_figures_are_those_over_every_tally(ran: tuple[Kept, Alive, dict[str, object]]) -> None:
    kept, _, report = ran
    summary, tallies = kept.summary, kept.tallies
    assert summary is not None and summary.unfinished == []
    verdicts = Counter(summary.status_of(t) for t in tallies if t.done)
    assert {v for v in verdicts if verdicts[v]} == {"passed", "scored", "failed", "skipped"}
    assert summary.eval_counts() == dict.fromkeys(("passed", "scored", "failed", "skipped"), 0) | verdicts
    assert summary.evals == 180 and summary.runs_done == sum(t.done for t in tallies) == 540
    assert summary.exit_code == 1

    rate, whole = folded_rate(summary.totals), suite_rate(tallies, strict=False)
    assert rate.clusters == whole.clusters == 20 + 60  # the qa evals by doc (20), each graded case its own (60)
    assert (rate.value, rate.low, rate.high) == pytest.approx((whole.value, whole.low, whole.high), rel=1e-9)
    points, all_points = folded_points(summary.totals), suite_points(tallies)
    assert (points.value, points.low, points.n) == pytest.approx((all_points.value, all_points.low, all_points.n))
    power = folded_power(summary.totals)
    assert power.detectable_drop == pytest.approx(suite_power(tallies, strict=False).detectable_drop, rel=1e-9)

    figures = report["summary"]
    assert isinstance(figures, dict)
    assert figures["evals"] == 180 and figures["runs"] == 540
    shown, expected = figures["pass_rate"], estimate_json(whole)
    assert isinstance(shown, dict)
    assert {k: shown[k] for k in ("n", "clusters", "note")} == {k: expected[k] for k in ("n", "clusters", "note")}
    numbers = ("value", "stderr", "low", "high")
    assert [shown[k] for k in numbers] == pytest.approx([expected[k] for k in numbers], rel=1e-9)
    assert len(report["evals"]) == 180  # type: ignore[arg-type]
