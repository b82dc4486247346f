"""`--resume` finishes a suite run in place; `--rerun-failed` reruns its failures into a new one.

The evals write a marker file per execution, so the tests count what really ran, not what the store says.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from niceeval import RunResult
from niceeval._core.summary import PlannedEval
from niceeval.sandbox import bwrap_problem
from niceeval.store import Store, SuiteRunStart
from niceeval.store._recorder import SuiteEnd
from niceeval.store._schema import eval_runs
from tests.store.test_store import recording

from ._project import Project

MARKED = """\
import uuid
from pathlib import Path

import anyio
from niceeval import define_eval
from niceeval.expect import includes

MARKERS = Path(__file__).resolve().parent.parent / "markers"


def mark(name):
    MARKERS.mkdir(exist_ok=True)
    (MARKERS / f"{{name}}.{{uuid.uuid4().hex}}").touch()

{evals}
"""

ONE = """
@define_eval
async def e{i}(t):
    mark("e{i}")
    await anyio.sleep({sleep})
    t.check("{reply}", includes("ok"))
"""


def write_evals(project: Project, count: int, *, sleep: float = 0.0, failing: frozenset[int] = frozenset()) -> None:
    body = "".join(ONE.format(i=i, sleep=sleep, reply="bad" if i in failing else "ok") for i in range(count))
    project.write("evals/marked.py", MARKED.format(evals=body))


def markers(project: Project) -> dict[str, int]:
    counts: dict[str, int] = {}
    for path in (project.root / "markers").glob("*"):
        name = path.name.split(".")[0]
        counts[name] = counts.get(name, 0) + 1
    return counts


def stored_count(store: Store, run_id: str) -> int:
    with store.engine.connect() as conn:
        query = select(func.count()).select_from(eval_runs).where(eval_runs.c.suite_run_id == run_id)
        return int(conn.execute(query).scalar_one())


def eval_id(i: int) -> str:
    return f"evals/marked.py::e{i}"


@pytest.mark.slow
def test_a_run_killed_halfway_resumes_without_redoing_finished_runs(project: Project, store_url: str) -> None:
    write_evals(project, 12, sleep=0.3)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NICEEVAL")}
    errors = project.out / "killed.stderr"
    with errors.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "niceeval.cli", "run", "--store", store_url, "--concurrency", "2"],
            cwd=project.root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    with Store.open(store_url) as store:
        deadline = time.monotonic() + 60
        while not (runs := store.runs(limit=1)) or stored_count(store, runs[0].id) < 4:
            assert process.poll() is None, f"the run ended early: {errors.read_text()}"
            assert time.monotonic() < deadline, "the run never stored 4 eval runs"
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        run_id = runs[0].id
        before = set(store.outcomes(run_id))
        assert store.run(run_id).run.status == "running" and 4 <= len(before) < 12

        resumed = project.run("--resume", "--store", store_url)

        assert resumed.code == 0, resumed.output
        assert resumed.report()["run_id"] == run_id
        assert resumed.report()["summary"]["passed"] == 12  # the report covers the whole suite run
        assert set(store.outcomes(run_id)) == {(eval_id(i), 0) for i in range(12)}
        assert stored_count(store, run_id) == 12  # every eval run exactly once
        assert store.run(run_id).run.status == "finished"
    ran = markers(project)
    assert all(ran[f"e{i}"] == 1 for i in range(12) if (eval_id(i), 0) in before)  # stored: never ran twice
    assert all(ran.get(f"e{i}", 0) >= 1 for i in range(12))


def test_resume_honours_runs_and_skips_what_is_stored(project: Project, store_url: str) -> None:
    write_evals(project, 2)
    with Store.open(store_url) as store:
        plan = [PlannedEval(id=eval_id(i), file="evals/marked.py", line=1) for i in range(2)]
        done = RunResult(eval_id=eval_id(0), file="evals/marked.py", line=1, outcome="passed", duration_s=0.1)
        with recording(store) as recorder:
            recorder.begin(SuiteRunStart(id="unfinished1"), plan)
            recorder.add("unfinished1", [done])
        resumed = project.run("--resume", "unfinished1", "--runs", "2", "--store", store_url)
        assert resumed.code == 0, resumed.output
        assert sorted(store.outcomes("unfinished1")) == [(eval_id(i), n) for i in range(2) for n in range(2)]
    assert markers(project) == {"e0": 1, "e1": 2}  # e0's run 0 was stored: only its run 1 ran


def test_resume_of_an_unknown_run_exits_2(project: Project, store_url: str) -> None:
    write_evals(project, 1)
    project.run("--store", store_url)
    resumed = project.run("--resume", "feedbeef", "--store", store_url)
    assert resumed.code == 2
    assert "no suite run 'feedbeef'" in resumed.stderr
    assert "e0" not in markers(project) or markers(project)["e0"] == 1  # nothing ran again


def test_resume_of_a_finished_run_exits_2_pointing_at_rerun_failed(project: Project, store_url: str) -> None:
    write_evals(project, 1)
    run_id = project.run("--store", store_url).report()["run_id"]
    resumed = project.run("--resume", run_id, "--store", store_url)
    assert resumed.code == 2
    assert f"suite run {run_id} already finished" in resumed.stderr and "--rerun-failed" in resumed.stderr


def test_resume_without_an_unfinished_run_exits_2(project: Project, store_url: str) -> None:
    write_evals(project, 1)
    project.run("--store", store_url)
    resumed = project.run("--resume", "--store", store_url)
    assert resumed.code == 2 and "no unfinished suite run to resume" in resumed.stderr


def test_rerun_failed_runs_only_the_failed_evals_into_a_linked_run(project: Project, store_url: str) -> None:
    write_evals(project, 3, failing=frozenset({1}))
    first = project.run("--store", store_url).report()["run_id"]
    rerun = project.run("--rerun-failed", "--store", store_url)
    assert rerun.code == 1
    assert [e["id"] for e in rerun.report()["evals"]] == [eval_id(1)]
    assert markers(project) == {"e0": 1, "e1": 2, "e2": 1}
    with Store.open(store_url) as store:
        info = store.run(rerun.report()["run_id"]).run
    assert (info.kind, info.parent_id) == ("rerun", first)


def test_rerun_failed_with_more_runs_adds_the_missing_run_indexes(project: Project, store_url: str) -> None:
    write_evals(project, 2, failing=frozenset({0}))
    project.run("--store", store_url)
    rerun = project.run("--rerun-failed", "--runs", "3", "--store", store_url)
    assert [len(e["runs"]) for e in rerun.report()["evals"]] == [3]
    assert markers(project) == {"e0": 4, "e1": 1}


def test_rerun_failed_of_a_clean_run_says_there_is_nothing_to_rerun(project: Project, store_url: str) -> None:
    write_evals(project, 1)
    project.run("--store", store_url)
    rerun = project.run("--rerun-failed", "--store", store_url)
    assert rerun.code == 0 and "has no failed evals: nothing to rerun" in rerun.stderr
    assert markers(project) == {"e0": 1}


def test_resume_needs_the_store(project: Project) -> None:
    write_evals(project, 1)
    resumed = project.run("--resume", "--no-store")
    assert resumed.code == 2 and "drop --no-store" in resumed.stderr


def test_adaptive_runs_are_stored_per_eval_and_a_resume_goes_on_deciding(project: Project, store_url: str) -> None:
    write_evals(project, 2, failing=frozenset({1}))
    first = project.run("--runs", "2..4", "--store", store_url)
    report = first.report()
    assert first.code == 1, first.output
    assert report["summary"]["runs"] == 6 and report["summary"]["runs_high"] == 4
    assert report["summary"]["runs_saved"] == 2  # e0 passes: 4 runs at gate 1.0; e1 failed: settled at 2
    assert "adaptive repeats: 6 runs made, 2 runs saved against --runs 4" in first.stdout
    assert markers(project) == {"e0": 4, "e1": 2}
    with Store.open(store_url) as store:
        assert {p.id: p.runs for p in store.planned(report["run_id"])} == {eval_id(0): 4, eval_id(1): 2}
        plan = [PlannedEval(id=eval_id(i), file="evals/marked.py", line=1, runs=2) for i in range(2)]
        stored = [
            RunResult(eval_id=eval_id(0), file="evals/marked.py", line=1, outcome="passed", duration_s=0.1, run_index=n)
            for n in range(3)
        ]
        with recording(store) as recorder:
            recorder.begin(SuiteRunStart(id="unfinished2"), plan)
            recorder.add("unfinished2", stored)
        resumed = project.run("--resume", "unfinished2", "--runs", "2..4", "--store", store_url)
        assert resumed.code == 1, resumed.output
        assert sorted(store.outcomes("unfinished2")) == [
            *((eval_id(0), n) for n in range(4)),
            *((eval_id(1), n) for n in range(2)),
        ]
        assert {p.id: p.runs for p in store.planned("unfinished2")} == {eval_id(0): 4, eval_id(1): 2}
    assert markers(project) == {"e0": 5, "e1": 4}  # e0: only its 4th run ran again; e1: its two


BIG = """
@define_eval
async def e{i}(t):
    t.check("ok " + "x" * 30_000, includes("ok"))
"""


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_resume_that_meets_a_full_disk_ends_its_suite_run_incomplete_never_running(
    project: Project, tmp_path: Path
) -> None:
    """The store sits on a disk (a tmpfs of bwrap's) with a few KB to spare, from too little for the resume to
    start to enough for all its runs: whatever fits, the suite run ends `incomplete` (or `finished`), never left
    `running` by an end that did not fit (issue 41)."""
    problem = bwrap_problem()
    if problem is not None:
        pytest.skip(problem)
    project.write("evals/big.py", MARKED.format(evals="".join(BIG.format(i=i) for i in range(6))))
    kept = tmp_path / "results.db"
    plan = [PlannedEval(id=f"evals/big.py::e{i}", file="evals/big.py", line=1) for i in range(6)]
    done = [RunResult(eval_id=f"evals/big.py::e{i}", file="evals/big.py", line=1, outcome="passed", duration_s=0.1)
            for i in range(2)]  # fmt: skip
    with Store.open(f"sqlite:///{kept}") as store, recording(store) as recorder:
        recorder.begin(SuiteRunStart(id="s1"), plan)
        recorder.add("s1", done)
        recorder.finish("s1", SuiteEnd(status="incomplete", exit_code=1, duration_s=1.0))  # the first attempt
    disk = tmp_path / "disk"
    disk.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NICEEVAL")}
    ended: dict[int, str] = {}
    for spare_kb in range(4, 41, 4):
        out = tmp_path / f"spare{spare_kb}"
        out.mkdir()
        resume = f"{sys.executable} -m niceeval.cli run --resume s1 --store {disk / 'results.db'} --no-cache"
        size = kept.stat().st_size + 32 * 1024 + spare_kb * 1024  # the database, its shared-memory index, the room
        done_run = subprocess.run(
            ["bwrap", "--dev-bind", "/", "/", "--size", str(size), "--tmpfs", str(disk), "sh", "-c",
             f"cp {kept} {disk}/ && {resume}; cp {disk / 'results.db'} {out}/"],
            cwd=project.root, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert "Traceback" not in done_run.stderr, done_run.stderr
        with Store.open(f"sqlite:///{out / 'results.db'}") as copy:
            ended[spare_kb] = copy.run("s1").run.status
    assert "running" not in ended.values(), ended
    assert ended[4] == "incomplete" and ended[40] == "finished", ended  # no room at all; room for every run
