"""Alarms valid under continuous monitoring: the simulation the issue asks for, the rules, and the watcher's hook."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from niceeval._run.execute import ExecOptions
from niceeval.online._alarms import DriftMonitor, evidence_paths, parse_alarm
from niceeval.online._assembler import AssemblyLimits
from niceeval.online._watch import Watcher, WatchOptions
from tests.online.online_helpers import chat_trace, online_evals
from tests.online.test_watch import post, recorder_for, scored, watching

ALPHA = 0.05
THRESHOLD = math.log(1 / ALPHA)


def streams(rng: np.random.Generator, rate: float, count: int = 200, length: int = 5_000) -> np.ndarray:
    return (rng.random((count, length)) < rate).astype(float)


@pytest.mark.parametrize("target", [0.8, 0.9])
def test_over_200_unchanged_streams_of_5000_traces_at_most_5_percent_raise_any_alarm(target: float) -> None:
    held = streams(np.random.default_rng(42), target)  # the worst case: the mean sits exactly at the target
    ever = (evidence_paths(held, target).max(axis=1) >= THRESHOLD).mean()
    assert ever <= ALPHA


@pytest.mark.parametrize("target", [0.8, 0.9])
def test_a_drop_of_10_points_at_trace_2000_fires_within_1500_traces(target: float) -> None:
    rng = np.random.default_rng(7)
    dropped = streams(rng, target)
    dropped[:, 2_000:] = streams(rng, target - 0.1, length=3_000)
    crossed = evidence_paths(dropped, target) >= THRESHOLD
    first = np.where(crossed.any(axis=1), crossed.argmax(axis=1), 10**9)
    late = first[first >= 2_000] - 2_000
    assert len(late) >= 190  # the few that fired before the drop are the false alarms counted above
    assert late.max() <= 1_500


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


@pytest.mark.parametrize(
    ("text", "problem"),
    [("rubric:helpful", "write ASSERTION[:EVAL]>=TARGET"), ("pass>=1.5", "the target is a mean score above 0")],
)
def test_a_bad_rule_says_how_to_write_one(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=re_escape(problem)):
        parse_alarm(text)


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


def test_a_rule_reads_an_assertion_by_kind_in_one_eval() -> None:
    rule = parse_alarm("rubric:helpful>=0.8")
    assert (rule.assertion, rule.eval_name, rule.target) == ("rubric", "helpful", 0.8)


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
