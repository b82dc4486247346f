"""`niceeval sandbox ...` and the life of a run's containers: kept ones are listed, entered, diffed, logged and
stopped; SIGTERM removes a run's containers; after `kill -9`, `niceeval sandbox prune` removes what it left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from docker_helpers import BASE_IMAGE, containers, needs_docker

from niceeval.cli import main

EVAL_FILE = """
import os
from pathlib import Path

from niceeval import EvalContext, define_eval
from niceeval.sandbox import docker_sandbox, service

web = service("web", image="{image}", command=["sh", "-c", "echo serving >&2; exec sleep 300"])


@define_eval(fixture="app", sandbox=docker_sandbox(image="{image}", services=[web]))
async def {name}(t: EvalContext) -> None:
    await t.sandbox.write_text("app.py", "VALUE = 2\\n")
    if "NICEEVAL_WAIT" in os.environ:  # the test signals the run once it is inside this command
        Path(os.environ["NICEEVAL_WAIT"]).touch()
        await t.sandbox.run_shell("sleep 600", timeout=900)
"""


@dataclass(frozen=True)
class Project:
    root: Path
    eval_id: str

    @property
    def label(self) -> str:
        return f"niceeval.eval={self.eval_id}"


@pytest.fixture
def project(tmp_path: Path) -> Project:
    needs_docker()
    name = f"edits_{uuid.uuid4().hex[:8]}"  # containers are found by eval id: each test has its own
    (tmp_path / "evals" / "app").mkdir(parents=True)
    (tmp_path / "evals" / "app" / "app.py").write_text("VALUE = 1\n")
    (tmp_path / "evals" / "test_docker_eval.py").write_text(EVAL_FILE.format(image=BASE_IMAGE, name=name))
    (tmp_path / "niceeval.config.py").write_text(
        "from niceeval import define_config\n\nconfig = define_config(store=False)\n"
    )
    return Project(root=tmp_path, eval_id=f"evals/test_docker_eval.py::{name}")


def niceeval(project: Project, *args: str, wait: Path | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, **({"NICEEVAL_WAIT": str(wait)} if wait else {})}
    return subprocess.Popen(
        [sys.executable, "-m", "niceeval", *args],
        cwd=project.root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_a_kept_sandbox_is_listed_entered_diffed_logged_and_stopped(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project.root)
    assert main(["run", "--keep-sandbox"]) == 0
    capsys.readouterr()
    (container,) = containers(project.label, "niceeval.role=workspace")
    try:
        assert main(["sandbox", "list"]) == 0
        listed = capsys.readouterr().out
        assert f"{container}  kept" in listed and project.eval_id in listed
        assert main(["sandbox", "diff", container[:6]]) == 0
        assert "-VALUE = 1\n+VALUE = 2" in capsys.readouterr().out
        assert main(["sandbox", "logs", container]) == 0
        logs = capsys.readouterr().out
        assert "== service web" in logs and "serving" in logs
        assert main(["sandbox", "enter", container, "grep", "-q", "VALUE = 2", "app.py"]) == 0
    finally:
        assert main(["sandbox", "stop", container]) == 0
    assert containers(project.label) == []


def test_an_unknown_sandbox_id_says_which_there_are(capsys: pytest.CaptureFixture[str]) -> None:
    needs_docker()
    assert main(["sandbox", "diff", "no-such-id"]) == 2
    assert "no sandbox container id starts with 'no-such-id'" in capsys.readouterr().err


def run_until_inside(project: Project) -> subprocess.Popen[str]:
    """Start `niceeval run` and return once its eval is inside its long command, with both containers up."""
    marker = project.root / "inside"
    run = niceeval(project, "run", wait=marker)
    deadline = time.monotonic() + 90
    while not marker.exists() or len(containers(project.label)) < 2:
        if run.poll() is not None or time.monotonic() > deadline:
            run.kill()
            pytest.fail(f"the run never got inside its eval:\n{run.communicate()[0]}")
        time.sleep(0.1)
    return run


@pytest.mark.slow
def test_sigterm_removes_the_runs_containers(project: Project) -> None:
    run = run_until_inside(project)
    run.send_signal(signal.SIGTERM)
    output, _ = run.communicate(timeout=60)
    assert run.returncode == 143, output
    assert containers(project.label) == []


@pytest.mark.slow
def test_prune_removes_what_a_killed_run_left(project: Project) -> None:
    run = run_until_inside(project)
    run.kill()
    run.communicate(timeout=30)
    assert len(containers(project.label)) == 3  # the workspace's, the service's and the network watcher's, left behind
    pruned = niceeval(project, "sandbox", "prune")
    output, _ = pruned.communicate(timeout=120)
    assert pruned.returncode == 0 and "removed" in output, output
    assert containers(project.label) == []
