"""`--shard I/N` and `--run-id`: shards started side by side, as CI jobs are, run every eval run exactly once.

The evals write a marker file per execution (named with the process id), so the tests count what really ran and
where, not what the reports or the store say.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from niceeval.store import Store
from niceeval.store._schema import eval_runs

from ._project import Project

HEADER = """\
import os
import time
import uuid
from pathlib import Path

from niceeval import define_eval
from niceeval.expect import includes

ROOT = Path(__file__).resolve().parent.parent
RAN = []


def mark(name):
    (ROOT / "markers").mkdir(exist_ok=True)
    (ROOT / "markers" / f"{name}.{os.getpid()}.{uuid.uuid4().hex}").touch()
    RAN.append(name)
    if len(RAN) == 3 and (ROOT / "crash").exists():  # the third run of a process kills it (a crashed CI job)
        time.sleep(1.0)  # the runs before it are committed: a killed process loses at most the last second's
        os._exit(9)

"""

PLAIN = """
@define_eval
async def e{i}(t):
    mark("e{i}")
    t.check("{reply}", includes("ok"))
"""

GROUPED = """
@define_eval(cases=[{"id": "c1"}, {"id": "c2"}, {"id": "c3"}], variants={"style": {"a": 1, "b": 2, "c": 3}})
async def styled(t):
    mark(f"styled[{t.case['id']}][{t.variant.name}]")
    t.check("ok", includes("ok"))
    t.max_score().soft()  # the losers score, they do not fail


@define_eval(sequential_runs=True)
async def ordered(t):
    mark("ordered")
    t.check("ok", includes("ok"))
"""


def write_evals(project: Project, count: int, *, failing: frozenset[int] = frozenset(), grouped: bool = False) -> None:
    body = "".join(PLAIN.format(i=i, reply="bad" if i in failing else "ok") for i in range(count))
    project.write("evals/sharded.py", HEADER + body + (GROUPED if grouped else ""))


def markers(project: Project) -> list[tuple[str, str]]:
    """(what ran, the process it ran in), one per execution."""
    found = []
    for path in (project.root / "markers").glob("*"):
        name, pid, _ = path.name.rsplit(".", 2)
        found.append((name, pid))
    return found


def start(project: Project, *args: str) -> subprocess.Popen[str]:
    """`niceeval ARGS` in the project, in the background (several run side by side)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NICEEVAL") and k not in ("COLUMNS", "TERM")}
    return subprocess.Popen(
        [sys.executable, "-W", "error", "-m", "niceeval.cli", *args],
        cwd=project.root,
        env={**env, "PYTHONIOENCODING": "utf-8"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def finish_all(processes: list[subprocess.Popen[str]]) -> list[tuple[int, str]]:
    """Each process's exit code and everything it printed, once all have ended."""
    ended = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert "Traceback" not in err, err
        ended.append((process.returncode, out + err))
    return ended


def shards_side_by_side(project: Project, count: int, *args: str) -> list[tuple[int, str]]:
    return finish_all([start(project, "run", "--shard", f"{n}/{count}", *args) for n in range(1, count + 1)])


def stored_count(store: Store, run_id: str) -> int:
    with store.engine.connect() as conn:
        query = select(func.count()).select_from(eval_runs).where(eval_runs.c.suite_run_id == run_id)
        return int(conn.execute(query).scalar_one())


def report_of(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_four_shards_run_every_eval_run_once_and_keep_groups_together(project: Project) -> None:
    write_evals(project, 12, grouped=True)
    reports = [project.out / f"shard{n}.json" for n in range(1, 5)]
    ended = finish_all(
        [
            start(project, "run", "--shard", f"{n}/4", "--runs", "2", "--no-store", "--json", str(reports[n - 1]))
            for n in range(1, 5)
        ]
    )
    assert [code for code, _ in ended] == [0, 0, 0, 0], ended
    ran = markers(project)
    counts = Counter(name for name, _ in ran)
    styled = [f"styled[{c}][style={v}]" for c in ("c1", "c2", "c3") for v in "abc"]
    assert counts == Counter({**{f"e{i}": 2 for i in range(12)}, **dict.fromkeys(styled, 2), "ordered": 2})
    assert len({pid for name, pid in ran if name == "ordered"}) == 1  # sequential runs: one shard
    shard_of_run: dict[tuple[str, int], int] = {}
    for n, path in enumerate(reports, start=1):
        for item in report_of(path)["evals"]:
            for run in item["runs"]:
                assert (item["id"], run["run_index"]) not in shard_of_run
                shard_of_run[(item["id"], run["run_index"])] = n
                if item["id"].startswith("evals/sharded.py::styled"):  # max-score saw all three variants
                    reason = next(a["reason"] for a in run["assertions"] if a["name"].startswith("max_score"))
                    assert all(f"style={v}" in reason for v in "abc"), reason
    assert len(shard_of_run) == (12 + 9 + 1) * 2
    for case in ("c1", "c2", "c3"):
        for index in (0, 1):
            variants = {shard_of_run[(f"evals/sharded.py::styled[{case}][style={v}]", index)] for v in "abc"}
            assert len(variants) == 1, (case, index, variants)


def test_three_shards_started_at_once_write_one_suite_run(project: Project, store_url: str) -> None:
    write_evals(project, 15, failing=frozenset({4}))
    ended = shards_side_by_side(project, 3, "--run-id", "gh-42", "--store", store_url)
    assert sorted(code for code, _ in ended) == [0, 0, 1], ended  # the shard that ran e4 failed
    assert Counter(name for name, _ in markers(project)) == {f"e{i}": 1 for i in range(15)}
    with Store.open(store_url) as store:
        assert [r.id for r in store.runs()] == ["gh-42"]
        info = store.run("gh-42").run
        assert (info.status, info.shard_count, info.shards_done, info.exit_code) == ("finished", 3, 3, 1)
        assert (info.passed, info.failed, info.runs_done, info.runs_planned) == (14, 1, 15, 15)
        assert set(store.outcomes("gh-42")) == {(f"evals/sharded.py::e{i}", 0) for i in range(15)}
        assert stored_count(store, "gh-42") == 15
    report = project.cli("report", "gh-42", "--store", store_url)
    assert report.code == 1 and "14 passed, 0 scored, 1 failed" in report.stdout
    assert "finished · 3 shards" in report.stdout


def test_report_of_a_partial_run_names_the_missing_shards_and_fails(project: Project) -> None:
    write_evals(project, 9)
    shards = ["run", "--run-id", "nightly-7"]
    assert [code for code, _ in finish_all([start(project, *shards, "--shard", f"{n}/3") for n in (1, 3)])] == [0, 0]
    partial_json = project.out / "partial.json"
    partial = project.cli("report", "nightly-7", "--json", str(partial_json))
    assert partial.code == 1
    assert "running · 2 of 3 shards in" in partial.stdout
    assert "incomplete: 2 of 3 shards in (missing: shard 2 (not started))" in partial.stdout
    stored = sum(len(e["runs"]) for e in report_of(partial_json)["evals"])
    assert 0 < stored < 9

    assert project.cli(*shards, "--shard", "2/3").code == 0
    whole_json, whole_junit = project.out / "whole.json", project.out / "whole.xml"
    whole = project.cli("report", "nightly-7", "--json", str(whole_json), "--junit", str(whole_junit))
    assert whole.code == 0, whole.output
    assert "incomplete" not in whole.stdout and "9 passed" in whole.stdout
    assert report_of(whole_json)["summary"]["runs"] == 9 and report_of(whole_json)["run_id"] == "nightly-7"
    assert whole_junit.read_text().count("<testcase") == 9


def test_a_crashed_shard_run_again_completes_only_its_missing_runs(project: Project) -> None:
    write_evals(project, 16)
    shard = ["--shard", "1/2", "--run-id", "ci-5", "--concurrency", "1"]
    (project.root / "crash").touch()
    crashed = project.cli("run", *shard)
    assert crashed.code == 9  # on its third run
    (project.root / "crash").unlink()
    with Store.open(str(project.root / ".niceeval" / "results.db")) as store:
        stored = {eval_id.rpartition("::")[2] for eval_id, _ in store.outcomes("ci-5")}
    assert len(stored) == 2

    again = project.run(*shard)

    assert again.code == 0, again.output
    assert "started before and did not finish (this is attempt 2)" in again.stderr
    ran = Counter(name for name, _ in markers(project))
    assert all(ran[name] == 1 for name in stored)  # stored before the crash: not run again
    assert sum(len(e["runs"]) for e in again.report()["evals"]) == len(ran)  # the report covers the whole shard
    refused = project.run(*shard)
    assert refused.code == 2 and "shard 1/2 of suite run ci-5 already finished" in refused.stderr
    with Store.open(str(project.root / ".niceeval" / "results.db")) as store:
        info = store.run("ci-5").run
        assert (info.status, info.shards_done) == ("running", 1)
        assert [(s.shard, s.status, s.attempts) for s in store.shards("ci-5")] == [(1, "finished", 2)]
    assert project.run("--shard", "2/2", "--run-id", "ci-5").code == 0
    ran = Counter(name for name, _ in markers(project))
    assert set(ran) == {f"e{i}" for i in range(16)} and sum(ran.values()) == 17  # once each; the crashed run twice


def test_without_run_id_each_shard_is_a_suite_run_of_its_own(project: Project) -> None:
    write_evals(project, 8)
    ended = shards_side_by_side(project, 2)
    assert [code for code, _ in ended] == [0, 0]
    with Store.open(str(project.root / ".niceeval" / "results.db")) as store:
        runs = store.runs()
        assert [r.status for r in runs] == ["finished", "finished"] and all(r.shard_count is None for r in runs)
        assert sum(r.runs_done for r in runs) == 8


@pytest.mark.parametrize("value", ["0/4", "5/4", "x", "4"])
def test_a_bad_shard_exits_2_saying_the_form(project: Project, value: str) -> None:
    write_evals(project, 1)
    result = project.run("--shard", value)
    assert result.code == 2
    assert f"--shard takes I/N with 1 <= I <= N, e.g. --shard 2/4; got '{value}'" in result.stderr
    assert not markers(project)


def test_shard_with_resume_is_refused_saying_how_a_shard_completes(project: Project) -> None:
    write_evals(project, 1)
    result = project.run("--shard", "1/2", "--resume")
    assert result.code == 2 and "run its command again with the same --run-id" in result.stderr


def test_run_id_needs_the_store(project: Project) -> None:
    write_evals(project, 1)
    result = project.run("--run-id", "gh-1", "--no-store")
    assert result.code == 2 and "drop --no-store" in result.stderr


def test_a_bad_run_id_exits_2(project: Project) -> None:
    write_evals(project, 1)
    result = project.run("--run-id", "has space")
    assert result.code == 2 and "--run-id takes 1 to 32 letters, digits" in result.stderr


def test_a_shard_with_another_count_is_refused(project: Project) -> None:
    write_evals(project, 2)
    assert project.run("--shard", "1/2", "--run-id", "gh-9").code == 0
    result = project.run("--shard", "2/3", "--run-id", "gh-9")
    assert result.code == 2 and "suite run gh-9 is split into 2 shards" in result.stderr


def test_resume_of_a_sharded_run_points_at_its_shards(project: Project) -> None:
    write_evals(project, 2)
    assert project.run("--shard", "1/2", "--run-id", "gh-9").code == 0
    result = project.run("--resume", "gh-9")
    assert result.code == 2 and "niceeval run --run-id gh-9 --shard I/2" in result.stderr


def test_the_sharding_example_in_the_docs_runs(project: Project) -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "store.md").read_text(encoding="utf-8")
    script = re.search(r"```bash\n# file: shards\.sh\n(.*?)```", docs, re.S)
    assert script is not None
    write_evals(project, 6)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NICEEVAL")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # the `niceeval` command of this venv
    done = subprocess.run(
        ["bash", "-c", script[1]], cwd=project.root, env=env, capture_output=True, text=True, timeout=120
    )
    shard_logs = "".join(
        f"\n--- {log.name}\n{log.read_text(errors='replace')}" for log in sorted(project.root.glob("shard-*.log"))
    )
    assert done.returncode == 0, done.stdout + done.stderr + shard_logs  # a shard's own words when it failed
    assert "finished · 3 shards" in done.stdout and "6 passed" in done.stdout
    assert (project.root / "report.xml").read_text().count("<testcase") == 6
