"""Alarms valid under continuous monitoring: the simulation the issue asks for, the rules, and the watcher's hook."""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from niceeval._core.results import RunResult
from niceeval._run.execute import ExecOptions
from niceeval.online._alarms import Alarms, StoredRun, Target, Window, parse_alarm
from niceeval.online._assembler import AssemblyLimits
from niceeval.online._watch import Watcher, WatchOptions
from niceeval.stats import DriftMonitor, evidence_paths, mean_lower_bound
from tests.online.online_helpers import chat_trace, online_evals
from tests.online.test_watch import post, recorder_for, scored, watching

ALPHA = 0.05
THRESHOLD = math.log(1 / ALPHA)
DROP_AT = 2_000


def streams(rng: np.random.Generator, rate: float, count: int = 200, length: int = 5_000) -> np.ndarray:
    return (rng.random((count, length)) < rate).astype(float)


def first_alarms(scores: np.ndarray, target: float | np.ndarray, alpha: float, offset: int = 0) -> np.ndarray:
    """The index of each stream's first alarm (10**9: none); the monitor reads `scores` from trace `offset` on."""
    crossed = evidence_paths(scores[:, offset:], target) >= math.log(1 / alpha)
    return np.where(crossed.any(axis=1), crossed.argmax(axis=1) + offset, 10**9)


def dropped_streams(rng: np.random.Generator, rate: float) -> np.ndarray:
    dropped = streams(rng, rate)
    dropped[:, DROP_AT:] = streams(rng, rate - 0.1, length=5_000 - DROP_AT)
    return dropped


def delays(first: np.ndarray) -> np.ndarray:
    late = first[first >= DROP_AT] - DROP_AT
    assert len(late) >= 190  # the few that fired before the drop are the false alarms counted apart
    return late


def window_targets(scores: np.ndarray, size: int) -> np.ndarray:
    return np.array([mean_lower_bound(list(row[:size]), ALPHA / 2) for row in scores])


@pytest.mark.parametrize("target", [0.7, 0.8, 0.9])
def test_over_200_unchanged_streams_of_5000_traces_at_most_5_percent_raise_any_alarm(target: float) -> None:
    held = streams(np.random.default_rng(42), target)  # the worst case: the mean sits exactly at the target
    assert (first_alarms(held, target, ALPHA) < 10**9).mean() <= ALPHA


@pytest.mark.parametrize(("target", "worst"), [(0.7, 1_048), (0.8, 798), (0.9, 750)])
def test_a_drop_of_10_points_at_trace_2000_fires_within_1500_traces(target: float, worst: int) -> None:
    late = delays(first_alarms(dropped_streams(np.random.default_rng(7), target), target, ALPHA))
    assert late.max() == worst <= 1_500  # the fresh starts: 1,573 at 0.7 with the evidence accumulated from trace 0


def test_a_drop_between_two_fresh_starts_still_fires_within_1500_traces() -> None:
    dropped = streams(np.random.default_rng(7), 0.7)
    dropped[:, 2_050:] = streams(np.random.default_rng(8), 0.6, length=2_950)
    first = first_alarms(dropped, 0.7, ALPHA)
    late = first[first >= 2_050] - 2_050
    assert len(late) >= 190 and late.max() <= 1_500


@pytest.mark.parametrize("rate", [0.7, 0.8, 0.9])
def test_against_a_window_of_the_first_2000_traces_an_unchanged_stream_raises_at_most_5_percent(rate: float) -> None:
    held = streams(np.random.default_rng(42), rate)
    first = first_alarms(held, window_targets(held, 2_000), ALPHA / 2, offset=2_000)
    assert (first < 10**9).mean() <= ALPHA


@pytest.mark.parametrize(("rate", "worst"), [(0.8, 923), (0.9, 774)])
def test_against_a_window_a_drop_of_10_points_fires_within_1500_traces(rate: float, worst: int) -> None:
    dropped = dropped_streams(np.random.default_rng(7), rate)
    late = delays(first_alarms(dropped, window_targets(dropped, DROP_AT), ALPHA / 2, offset=DROP_AT))
    assert late.max() == worst <= 1_500


def run_targets(rng: np.random.Generator, rate: float, size: int) -> np.ndarray:
    return np.array([mean_lower_bound(list(row), ALPHA / 2) for row in streams(rng, rate, length=size)])


@pytest.mark.parametrize("rate", [0.7, 0.8, 0.9])
def test_against_a_stored_run_of_5000_an_unchanged_stream_raises_at_most_5_percent(rate: float) -> None:
    rng = np.random.default_rng(42)
    targets = run_targets(rng, rate, 5_000)
    assert (first_alarms(streams(rng, rate), targets, ALPHA / 2) < 10**9).mean() <= ALPHA


@pytest.mark.parametrize(("rate", "worst"), [(0.7, 1_395), (0.8, 1_307), (0.9, 920)])
def test_against_a_stored_run_a_drop_of_10_points_fires_within_1500_traces(rate: float, worst: int) -> None:
    rng = np.random.default_rng(7)
    targets = run_targets(rng, rate, 5_000)
    late = delays(first_alarms(dropped_streams(rng, rate), targets, ALPHA / 2))
    assert late.max() == worst <= 1_500


def test_the_monitor_fed_one_score_at_a_time_agrees_with_the_simulation() -> None:
    rng = np.random.default_rng(3)
    stream = np.concatenate([streams(rng, 0.8, 1, 500)[0], streams(rng, 0.6, 1, 400)[0]])
    monitor = DriftMonitor(0.8, ALPHA)
    fired = [monitor.update(score) for score in stream]
    path = evidence_paths(stream, 0.8)[0]
    assert monitor.log_evidence == pytest.approx(path[-1])
    assert fired.index(True) == int(np.argmax(path >= THRESHOLD))


def test_scores_between_0_and_1_are_monitored_too() -> None:
    monitor = DriftMonitor(0.8, ALPHA)
    assert not any(monitor.update(0.8) for _ in range(2_000))  # right at the target: no evidence grows
    assert any(monitor.update(0.55) for _ in range(300))


def test_the_lower_bound_is_exact_for_pass_fail_and_hoeffding_for_scores() -> None:
    assert mean_lower_bound([1.0] * 70 + [0.0] * 30, 0.025) == pytest.approx(0.6001, abs=1e-4)  # Clopper-Pearson
    assert mean_lower_bound([0.7] * 100, 0.025) == pytest.approx(0.7 - math.sqrt(math.log(40) / 200))
    assert mean_lower_bound([0.0] * 10, 0.025) == 0.0 and mean_lower_bound([], 0.025) == 0.0


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("rubric:helpful", "write ASSERTION[:EVAL]>=REFERENCE"),
        ("pass>=1.5", "the reference is a mean score above 0 and below 1"),
        ("pass>=window:0", "a window holds at least one score"),
        ("pass>=ref", "'ref' compares with a stored suite run: pass --reference RUN_ID"),
    ],
)
def test_a_bad_rule_says_how_to_write_one(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        parse_alarm(text)


def test_a_rule_reads_an_assertion_by_kind_in_one_eval_against_each_kind_of_reference() -> None:
    rule = parse_alarm("rubric:helpful>=0.8")
    assert (rule.assertion, rule.eval_name, rule.reference) == ("rubric", "helpful", Target(0.8))
    assert parse_alarm("pass>=window:1_000").reference == Window(1_000)
    stored = [result_of("helpful", passed=p) for p in (True, True, False)] + [result_of("other", passed=False)]
    assert parse_alarm("pass:helpful>=ref", stored=("r1", stored)).reference == StoredRun("r1", (1.0, 1.0, 0.0))


def test_a_reference_run_without_the_rules_scores_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="the reference run r1 holds no score of 'pass' in eval 'missing'"):
        parse_alarm("pass:missing>=ref", stored=("r1", [result_of("helpful", passed=True)]))


def result_of(eval_name: str, *, passed: bool) -> RunResult:
    outcome = "passed" if passed else "failed"
    return RunResult(
        eval_id=f"evals/online.py::{eval_name}", file="evals/online.py", line=1, outcome=outcome, duration_s=0
    )


def test_a_window_rule_fires_against_the_first_scores_then_names_them() -> None:
    alarms = Alarms([parse_alarm("pass>=window:200")])
    rng = np.random.default_rng(5)
    passes = np.concatenate([rng.random(200) < 0.9, rng.random(1_800) < 0.6])
    fired = [alarms.observe(result_of("helpful", passed=bool(x))) for x in passes]
    assert all(not f for f in fired[:200])  # the window fills first: nothing to compare with yet
    (alarm,) = [a for f in fired for a in f]
    assert (
        alarm.reference.startswith("the first scores of this watch (mean 0.9")
        and "over 200 score(s)" in alarm.reference
    )
    assert alarm.alpha == ALPHA and alarm.threshold == 2 / ALPHA and alarm.target < 0.9


FAILING = """
from niceeval import define_eval
from niceeval.expect import includes

@define_eval(online=True)
def helpful(t):
    t.check(t.reply, includes("refund"))
"""


@pytest.mark.anyio
async def test_an_alarm_is_printed_kept_on_the_result_and_runs_the_hook(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hook = tmp_path / "alarm.json"
    command = f"{sys.executable} -c \"import sys; open({str(hook)!r}, 'w').write(sys.stdin.read())\""
    options = WatchOptions(
        port=0,
        limits=AssemblyLimits(grace=0.01),
        concurrency=1,
        alarms=(parse_alarm("includes:helpful>=0.9"),),
        on_alarm=command,
    )
    evals = online_evals(tmp_path, FAILING)
    recorder, record = recorder_for(tmp_path, evals)
    watcher = Watcher(evals, ExecOptions(timeout=10, root=tmp_path), options, record=record)
    kept: list = []
    watcher.sinks.append(type("Keep", (), {"took": lambda self, result, trace: kept.append(result)})())
    async with watching(watcher):
        for i in range(5):
            await post(watcher, chat_trace(f"q{i}", "no idea")[1])
        await scored(watcher, 5)
    evidence = json.loads(hook.read_text())
    assert evidence["rule"] == "includes:helpful>=0.9" and evidence["mean"] == 0.0 and evidence["e_value"] >= 20
    tipped = [r for r in kept if any(w.startswith("ALARM includes:helpful>=0.9") for w in r.warnings)]
    assert len(tipped) == 1 and tipped[0].case_id == evidence["trace_id"]
    assert watcher.status()["alarms"] == [evidence]
    assert "ALARM includes:helpful>=0.9: the mean is 0.000 over 3 score(s)" in capsys.readouterr().err
    recorder.close()
    from niceeval.store import Store

    with Store.open(str(tmp_path / "results.db")) as store:
        (run,) = store.runs()
        stored = [r for r in store.results(run.id) if r.warnings]
    assert [(r.case_id, r.warnings) for r in stored] == [(tipped[0].case_id, tipped[0].warnings)]


@pytest.mark.anyio
async def test_an_earlier_watch_stored_in_the_store_is_a_reference_window(tmp_path: Path) -> None:
    evals = online_evals(tmp_path, FAILING)
    recorder, record = recorder_for(tmp_path, evals)
    options = WatchOptions(port=0, limits=AssemblyLimits(grace=0.01), concurrency=1)
    watcher = Watcher(evals, ExecOptions(timeout=10, root=tmp_path), options, record=record)
    async with watching(watcher):
        for reply in ("your refund is sent", "refund on its way", "no idea"):
            await post(watcher, chat_trace(reply, reply)[1])
        await scored(watcher, 3)
    recorder.close()
    from niceeval.store import Store

    with Store.open(str(tmp_path / "results.db")) as store:
        (run,) = store.runs()
        results = list(store.results(run.id))
    rule = parse_alarm("includes:helpful>=ref", stored=(run.id, results))
    assert isinstance(rule.reference, StoredRun) and sorted(rule.reference.scores) == [0.0, 1.0, 1.0]
    assert Alarms([rule]).observe(results[0]) == []
