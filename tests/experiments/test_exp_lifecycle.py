"""An experiment's setup and teardown, early exit, its own limits, `exp list`, `exp rename`, and refused accepts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from niceeval.store import Store
from tests.e2e._project import Project, make_project

FLAKY = """\
from pathlib import Path

from niceeval import define_eval
from niceeval.expect import includes


@define_eval
async def second_try(t):
    tries = Path("tries")
    count = int(tries.read_text()) + 1 if tries.exists() else 1
    tries.write_text(str(count))
    await t.send("attempt " + str(count))
    t.check(t.reply, includes("attempt 2"))
"""

HOOKED = """\
from pathlib import Path

from niceeval import define_experiment


def setup():
    Path("log").write_text(Path("log").read_text() + "setup\\n" if Path("log").exists() else "setup\\n")


async def teardown():
    Path("log").write_text(Path("log").read_text() + "teardown\\n")


experiment = define_experiment(setup=setup, teardown=teardown, runs=4, early_exit=True, labels={"kind": "pass@k"})
"""


def _project(tmp_path: Path) -> Project:
    made = make_project(tmp_path)  # the echo agent
    made.write("evals/flaky.py", FLAKY)
    made.write("experiments/hooked.py", HOOKED)
    return made


def _store(project: Project) -> Store:
    return Store.open(str(project.root / ".niceeval" / "results.db"), root=project.root)


def test_setup_and_teardown_run_once_around_the_experiment_and_early_exit_stops_at_the_first_pass(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path)
    done = project.cli("exp", "--json", str(project.out / "report.json"))
    assert done.code == 0, done.output
    assert (project.root / "log").read_text() == "setup\nteardown\n"
    assert (project.root / "tries").read_text() == "2"  # attempts 3 and 4 were not needed
    report = json.loads((project.out / "report.json").read_text())
    assert [r["outcome"] for r in report["evals"][0]["runs"]] == ["failed", "passed"]


def test_early_exit_with_a_carried_pass_runs_nothing_more(tmp_path: Path) -> None:
    project = _project(tmp_path)
    assert project.cli("exp").code == 0
    again = project.cli("exp", "--json", str(project.out / "report.json"))
    assert again.code == 0, again.output
    assert (project.root / "tries").read_text() == "2"
    report = json.loads((project.out / "report.json").read_text())
    runs = report["evals"][0]["runs"]
    assert [(r["provenance"], r["outcome"]) for r in runs] == [("carried", "failed"), ("carried", "passed")]


def test_teardown_runs_after_a_failing_setup_is_reported_and_nothing_runs(tmp_path: Path) -> None:
    project = _project(tmp_path)
    project.write(
        "experiments/hooked.py", HOOKED.replace("def setup():\n", 'def setup():\n    raise OSError("no db")\n')
    )
    done = project.cli("exp")
    assert done.code == 2
    line = project.line_of("experiments/hooked.py", 'raise OSError("no db")')
    assert f"experiments/hooked.py:{line}: experiment hooked: setup raised OSError: no db; its evals did not run" in (
        done.stderr
    )
    assert not (project.root / "tries").exists()


def test_teardown_runs_after_an_interruption(tmp_path: Path) -> None:
    project = _project(tmp_path)
    project.write(
        "evals/flaky.py",
        "from pathlib import Path\n\nimport anyio\nfrom niceeval import define_eval\n\n\n@define_eval\n"
        "async def waits(t):\n    Path('started').write_text('yes')\n    await anyio.sleep(60)\n",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("NICEEVAL")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "niceeval.cli", "exp"],
        cwd=project.root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not (project.root / "started").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the eval never started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    assert (project.root / "log").read_text() == "setup\nteardown\n"
    with _store(project) as store:
        (run,) = store.runs(experiment="hooked")
        assert run.status == "interrupted"


def test_the_experiments_own_limits_apply_and_the_command_line_wins(tmp_path: Path) -> None:
    project = _project(tmp_path)
    project.write("experiments/hooked.py", HOOKED.replace("early_exit=True", "timeout=0.5, concurrency=1"))
    project.write(
        "evals/flaky.py",
        "import anyio\nfrom niceeval import define_eval\n\n\n@define_eval\n"
        "async def slow(t):\n    await anyio.sleep(2)\n",
    )
    done = project.cli("exp", "--runs", "1", "--json", str(project.out / "report.json"))
    assert done.code == 1
    (run,) = json.loads((project.out / "report.json").read_text())["evals"][0]["runs"]
    assert run["error"]["kind"] == "timeout" and "0.5 s timeout" in run["error"]["message"]


def test_exp_list_shows_each_experiment_with_its_setup_and_stored_runs(tmp_path: Path) -> None:
    project = _project(tmp_path)
    project.write("experiments/plain.py", "from niceeval import define_experiment\nexperiment = define_experiment()\n")
    assert project.cli("exp", "experiments/hooked.py").code == 0
    listed = project.cli("exp", "list")
    assert listed.code == 0, listed.output
    with _store(project) as store:
        latest = store.runs(experiment="hooked")[0].id
    assert listed.stdout.splitlines() == [
        f"hooked  experiments/hooked.py: labels {{'kind': 'pass@k'}}  [1 suite run, latest {latest}]",
        "plain  experiments/plain.py  [no suite run]",
    ]


def test_exp_rename_moves_the_history_so_the_renamed_file_carries_it(tmp_path: Path) -> None:
    project = _project(tmp_path)
    assert project.cli("exp").code == 0
    renamed = project.cli("exp", "rename", "hooked", "pass_at_k")
    assert renamed.code == 0, renamed.output
    assert "experiment hooked is now pass_at_k: 1 suite run moved." in renamed.stdout
    assert "rename its file too: experiments/pass_at_k.py" in renamed.stderr
    (project.root / "experiments" / "hooked.py").rename(project.root / "experiments" / "pass_at_k.py")
    assert project.cli("exp").code == 0
    assert (project.root / "tries").read_text() == "2"  # carried under the new name: nothing ran again
    unknown = project.cli("exp", "rename", "nobody", "x")
    assert unknown.code == 2 and "no experiment 'nobody' in the results store" in unknown.stderr
    taken = project.cli("exp", "rename", "pass_at_k", "pass_at_k")
    assert taken.code == 2 and "experiment 'pass_at_k' already has runs" in taken.stderr


def test_accept_refuses_an_errored_attempt_and_an_unknown_one_and_records_nothing(tmp_path: Path) -> None:
    project = _project(tmp_path)
    project.write(
        "evals/flaky.py",
        "from niceeval import define_eval\n\n\n@define_eval\nasync def boom(t):\n    raise ValueError('bad')\n",
    )
    project.write("experiments/hooked.py", HOOKED.replace("runs=4, early_exit=True", "runs=1"))
    assert project.cli("exp").code == 1
    with _store(project) as store:
        run = store.runs(experiment="hooked")[0].id
    errored = project.cli("accept", run, "evals/flaky.py::boom")
    assert errored.code == 2
    assert (
        f"attempt 0 of evals/flaky.py::boom in suite run {run} errored (ValueError: bad): only an attempt that ran "
        "to its verdict can be accepted. Nothing was recorded." in errored.stderr
    )
    unknown = project.cli("accept", run, "evals/flaky.py::boom", "7")
    assert unknown.code == 2 and f"suite run {run} has no attempt 7 of eval 'evals/flaky.py::boom'" in unknown.stderr
    with _store(project) as store:
        assert store.acceptances("hooked") == []


def test_early_exit_refuses_adaptive_repeats(tmp_path: Path) -> None:
    project = _project(tmp_path)
    refused = project.cli("exp", "--runs", "auto")
    assert refused.code == 2
    line = project.line_of("experiments/hooked.py", "experiment = define_experiment(")
    assert f"experiments/hooked.py:{line}: early_exit=True stops at the first pass, so it does not go with --runs" in (
        refused.stderr
    )
    assert not (project.root / "tries").exists()
