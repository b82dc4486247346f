"""The hot path's shared machinery: one warm-up per suite, collections paced, tallies that stay small."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio

from niceeval._core.results import RunResult, Spend
from niceeval._core.summary import EvalTally, PlannedEval
from niceeval._core.threads import once_off_loop
from niceeval._run.gc_pacing import YOUNG_THRESHOLD, paced_collection


def test_work_asked_by_many_coroutines_at_once_runs_once_in_one_thread() -> None:
    ran: list[str] = []
    done = False

    def work() -> None:
        nonlocal done
        time.sleep(0.05)  # long enough for every asker to arrive while it runs
        ran.append(threading.current_thread().name)
        done = True

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(40):
                tg.start_soon(once_off_loop, "warm", work, lambda: done)
        await once_off_loop("warm", work, lambda: done)  # done already: no thread at all

    anyio.run(main)
    assert len(ran) == 1 and ran[0] != threading.main_thread().name


def test_the_suite_loop_collects_less_often_and_puts_the_old_pace_back() -> None:
    before = gc.get_threshold()
    with paced_collection():
        assert gc.get_threshold()[0] == max(before[0], YOUNG_THRESHOLD)
        assert gc.get_freeze_count() > 0  # what start-up made is left out of every collection
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_a_suite_that_ends_the_process_leaves_start_up_frozen_for_the_collection_before_exit() -> None:
    try:
        with paced_collection(process_ends=True):
            assert gc.get_freeze_count() > 0
        assert gc.get_freeze_count() > 0  # still: the exit's collection walks only what the suite made
    finally:
        gc.unfreeze()
    assert gc.get_freeze_count() == 0


def _run(agent: Spend, judge: Spend) -> RunResult:
    return RunResult(
        eval_id="e.py::x", file="e.py", line=1, outcome="passed", duration_s=0.1, agent_spend=agent, judge_spend=judge
    )


def test_a_tally_sums_spend_over_runs_with_unknown_costs_and_unpriced_models_kept() -> None:
    tally = EvalTally(eval=PlannedEval(id="e.py::x", file="e.py", line=1, runs=3))
    assert tally.agent_spend is None and tally.judge_spend is None
    tally.add(_run(Spend(calls=1, tokens=10, input_tokens=7, output_tokens=3, cost=0.5), Spend(cached=1)))
    tally.add(_run(Spend(calls=2, tokens=5, output_tokens=5, cost=None, unpriced=["openai/x"]), Spend()))
    tally.add(_run(Spend(), Spend(calls=1, tokens=4, input_tokens=4, cost=0.25)))
    assert tally.agent_spend == Spend(
        calls=3, tokens=15, input_tokens=7, output_tokens=8, cost=None, unpriced=["openai/x"]
    )
    assert tally.judge_spend == Spend(calls=1, tokens=4, input_tokens=4, cost=0.25, cached=1)


def test_the_sdk_warm_up_loads_what_a_chat_completion_needs_and_no_more() -> None:
    probe = (
        "import sys\n"
        "from niceeval.providers._warm_up import _warm_up\n"
        "_warm_up('openai')\n"
        "print(' '.join(m for m in ('openai.resources.chat.completions', 'httpcore2', 'httpcore', 'h11',\n"
        "    'openai.resources.responses.responses') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    loaded = set(done.stdout.split())
    assert {"openai.resources.chat.completions", "h11"} <= loaded and loaded & {"httpcore2", "httpcore"}
    assert "openai.resources.responses.responses" not in loaded  # the Responses API's types: 3 MB nothing sends


def test_a_big_cheap_suite_runs_without_a_young_collection_its_count_triggers(tmp_path: Path) -> None:
    # At a threshold of 10,000 this suite made about ten young passes, freeing nothing: each pass moved the runs in
    # flight (the store's pending batch) out of the young generation, and their frees then no longer counted. A
    # pass the count triggers starts with the count past the threshold (at 10,000 this suite makes 11 of them, each
    # at 10,001). CPython 3.13 also starts young passes of its own whatever the threshold, one of them at some
    # 9,000 on a quiet machine, which a loaded one can push past 10,000: one such pass is not the suite's pace.
    (tmp_path / "evals").mkdir()
    rows = "".join(json.dumps({"id": f"q{i}", "answer": f"answer {i}"}) + "\n" for i in range(4_000))
    (tmp_path / "evals" / "qa.jsonl").write_text(rows)
    (tmp_path / "evals" / "qa.py").write_text(
        "from niceeval import define_eval\n"
        "from niceeval.expect import includes\n\n\n"
        "@define_eval(cases='qa.jsonl')\n"
        "def qa(t):\n"
        "    t.check(t.case['answer'], includes('answer'))\n"
    )
    probe = (
        "import gc, sys\n"
        "from niceeval.cli._main import main\n"
        "young = []\n"
        "def note(phase, info):  # a young pass under the suite's pace (start-up's imports run at the default)\n"
        "    if phase == 'start' and info['generation'] < 2 and gc.get_threshold()[0] > 700:\n"
        "        young.append(gc.get_count()[0])\n"
        "gc.callbacks.append(note)\n"
        "code = main(['run', 'evals', '--runs', '1'])\n"
        "print(code, sum(count >= 10_000 for count in young), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=True
    )
    code, past = done.stderr.split()[-2:]
    assert (code, int(past) <= 1) == ("0", True), done.stderr[-2000:]  # every eval passed; no pace at 10,000
