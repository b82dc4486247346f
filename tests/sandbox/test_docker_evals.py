"""Docker sandboxes from the eval's side: declared per eval, as the config's default or per variant; a Dockerfile built
once per content; and bad input (a missing Dockerfile, an unknown image, a service never ready, no daemon) errors
that eval with the cause and the fix, while the others run and nothing falls back to a less isolated sandbox."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from docker_helpers import BASE_IMAGE, containers, needs_docker

from niceeval import EvalContext, define_eval
from niceeval._core.results import RunResult
from niceeval._core.summary import PlannedEval, Problem, SuiteSummary
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval._run.suite import SuiteOptions, run_suite
from niceeval.agents import per_variant
from niceeval.expect import equals
from niceeval.sandbox import docker_problem, docker_sandbox, service
from niceeval.sandbox._docker_cli import SUITE_RUN


@pytest.fixture
def project(tmp_path: Path) -> Path:
    needs_docker()
    fixture = tmp_path / "fixtures" / "app"
    fixture.mkdir(parents=True)
    (fixture / "app.py").write_text("VALUE = 1\n")
    return tmp_path


def run(spec: EvalSpec, root: Path, **options: Any) -> RunResult:
    entry = EvalEntry(id=f"{root.name}.py::{spec.name}", spec=spec)
    return anyio.run(execute, entry, 0, ExecOptions(timeout=120, root=root, **options))


def os_release(sandbox: Any) -> EvalSpec:
    @define_eval(fixture="fixtures/app", sandbox=sandbox)
    async def reads_the_image(t: EvalContext) -> None:
        result = await t.sandbox.run_shell("grep ^VERSION_CODENAME /etc/os-release; cat /built.txt 2>/dev/null || true")
        t.check(result.stdout, equals("VERSION_CODENAME=bookworm\n"))
        await t.sandbox.write_text("app.py", "VALUE = 2\n")

    return reads_the_image


def test_an_eval_runs_in_its_declared_image_and_leaves_no_container(project: Path) -> None:
    result = run(os_release(docker_sandbox(image=BASE_IMAGE)), project)
    assert (result.error, result.outcome) == (None, "passed")
    assert result.workspace_diff is not None and "+VALUE = 2" in result.workspace_diff
    (shell,) = [e for e in result.events if e.type == "action.called"]
    assert (shell.kind, shell.status) == ("shell", "success")
    assert containers(f"niceeval.suite_run={SUITE_RUN}") == []


def test_the_config_default_and_per_variant_declarations_are_used(project: Path) -> None:
    default = run(os_release(None), project, sandbox=docker_sandbox(image=BASE_IMAGE))
    assert (default.error, default.outcome) == (None, "passed")

    @define_eval(
        fixture="fixtures/app",
        variants={"image": [BASE_IMAGE]},
        sandbox=per_variant(lambda v: docker_sandbox(image=v["image"])),
    )
    async def per_image(t: EvalContext) -> None:
        result = await t.sandbox.run_shell("test -f /.dockerenv && echo in-docker")
        t.check(result.stdout, equals("in-docker\n"))

    entry = EvalEntry(id="x.py::per_image", spec=per_image, variant=per_image.variants[0])
    result = anyio.run(execute, entry, 0, ExecOptions(timeout=120, root=project, sandbox="local"))
    assert (result.error, result.outcome) == (None, "passed")


def test_a_dockerfile_is_built_once_per_content_and_reused(project: Path) -> None:
    dockerfile = project / "env" / "Dockerfile"
    dockerfile.parent.mkdir()
    dockerfile.write_text(f"FROM {BASE_IMAGE}\nRUN echo built-1 > /built.txt\n")

    @define_eval(fixture="fixtures/app", sandbox=docker_sandbox(dockerfile="env/Dockerfile"))
    async def built(t: EvalContext) -> None:
        result = await t.sandbox.run_shell("cat /built.txt")
        t.check(result.stdout, equals(expected[0]))

    expected = ["built-1\n"]
    first, second = run(built, project), run(built, project)
    assert (first.outcome, second.outcome) == ("passed", "passed"), first.error
    tags = _build_tags()
    dockerfile.write_text(f"FROM {BASE_IMAGE}\nRUN echo built-2 > /built.txt\n")
    expected[0] = "built-2\n"
    assert run(built, project).outcome == "passed"
    new_tags = _build_tags() - tags
    assert len(new_tags) == 1 and next(iter(new_tags)).startswith("niceeval-build:")
    subprocess.run(["docker", "image", "rm", *new_tags], capture_output=True, check=False)


def _build_tags() -> set[str]:
    done = subprocess.run(
        ["docker", "images", "--format", "{{.Repository}}:{{.Tag}}", "niceeval-build"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(done.stdout.split())


def test_setup_runs_in_the_container_once_per_image(project: Path) -> None:
    @define_eval(
        fixture="fixtures/app",
        setup=["test -f /.dockerenv && echo built > built.txt"],
        sandbox=docker_sandbox(image=BASE_IMAGE),
    )
    async def prepared(t: EvalContext) -> None:
        t.check(await t.sandbox.read_text("built.txt"), equals("built\n"))

    first, second = run(prepared, project), run(prepared, project)
    assert (first.outcome, second.outcome) == ("passed", "passed"), first.error
    (cached,) = (project / ".niceeval" / "fixtures").iterdir()
    assert (cached / "workspace" / "built.txt").read_text() == "built\n"


class Collect:
    def __init__(self) -> None:
        self.results: dict[str, RunResult] = {}
        self.runs: list[RunResult] = []

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        pass

    def run_finished(self, result: RunResult) -> None:
        self.results[result.eval_id.rpartition("::")[2]] = result
        self.runs.append(result)

    def results_of(self, name: str) -> list[RunResult]:
        return [r for r in self.runs if r.eval_id.endswith(f"::{name}")]

    def finish(self, summary: SuiteSummary) -> None:
        pass


def escape_attempt(name: str, target: Path, sandbox: Any) -> EvalSpec:
    async def writes(t: EvalContext) -> None:
        result = await t.sandbox.run_shell(f"echo escaped > {target}")
        t.check(result.exit_code, equals(0))

    writes.__name__ = writes.__qualname__ = name
    return define_eval(fixture="fixtures/app", sandbox=sandbox)(writes)


def run_beside_a_passing_eval(project: Path, sandbox: Any) -> RunResult:
    """Run a broken Docker eval in a suite with a passing one: that one must still run and pass."""
    target = project / "escaped.txt"

    @define_eval
    async def other(t: EvalContext) -> None:
        t.check(1, equals(1))

    specs = [escape_attempt("broken", target, sandbox), other]
    entries = [EvalEntry(id=f"x.py::{spec.name}", spec=spec) for spec in specs]
    collect = Collect()
    options = SuiteOptions(concurrency=2, exec=ExecOptions(timeout=120, root=project))
    anyio.run(run_suite, entries, [], options, [collect])
    assert collect.results["other"].outcome == "passed"
    broken = collect.results["broken"]
    assert broken.outcome == "failed" and broken.error is not None  # errored: failed, with the error
    assert not target.exists(), "nothing ran in a less isolated sandbox"
    assert [e for e in broken.events if e.type == "action.called"] == []
    return broken


def test_a_missing_dockerfile_errors_the_eval_with_the_path_and_the_fix(project: Path) -> None:
    broken = run_beside_a_passing_eval(project, docker_sandbox(dockerfile="env/Missing.dockerfile"))
    assert broken.error is not None and broken.error.type == "DockerSandboxError"
    assert "dockerfile='env/Missing.dockerfile') does not exist" in broken.error.message
    assert str(project / "env" / "Missing.dockerfile") in broken.error.message
    assert "fix the path" in broken.error.message


def test_a_dockerfile_that_fails_to_build_errors_the_eval_with_its_output(project: Path) -> None:
    (project / "Dockerfile").write_text(f"FROM {BASE_IMAGE}\nRUN echo no-such-step >&2; exit 3\n")
    broken = run_beside_a_passing_eval(project, docker_sandbox(dockerfile="Dockerfile"))
    assert broken.error is not None and broken.error.type == "DockerSandboxError"
    assert f"building {project / 'Dockerfile'} failed" in broken.error.message
    assert "Fix the Dockerfile" in broken.error.message


def test_an_unknown_image_errors_the_eval_with_the_fix(project: Path) -> None:
    broken = run_beside_a_passing_eval(project, docker_sandbox(image="niceeval-no-such-image:1"))
    assert broken.error is not None and broken.error.type == "DockerSandboxError"
    assert "image 'niceeval-no-such-image:1' is not on this Docker daemon" in broken.error.message
    assert "docker_sandbox(dockerfile=" in broken.error.message


def test_a_service_never_ready_errors_the_eval_with_its_log(project: Path) -> None:
    starting = ["sh", "-c", "echo starting up; sleep 300"]
    never = service("db", image=BASE_IMAGE, command=starting, ready="false", ready_timeout=1.5)
    broken = run_beside_a_passing_eval(project, docker_sandbox(image=BASE_IMAGE, services=[never]))
    assert broken.error is not None and broken.error.type == "DockerSandboxError"
    message = broken.error.message
    assert "service 'db' was not ready within 1.5 s ('false' never exited 0)" in message
    assert "starting up" in message and "ready_timeout" in message
    assert containers(f"niceeval.suite_run={SUITE_RUN}") == []


def test_a_service_that_exits_errors_the_eval_at_once_with_its_log(project: Path) -> None:
    crash = service("db", image=BASE_IMAGE, command=["sh", "-c", "echo bad config >&2; exit 3"], ready="false")
    broken = run_beside_a_passing_eval(project, docker_sandbox(image=BASE_IMAGE, services=[crash]))
    assert broken.error is not None and "service 'db' exited before it was ready" in broken.error.message
    assert "bad config" in broken.error.message
    assert broken.duration_s < 30


def test_no_daemon_errors_the_eval_with_how_to_start_it(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{project}/no-docker.sock")
    docker_problem.cache_clear()
    try:
        broken = run_beside_a_passing_eval(project, "docker")
    finally:
        monkeypatch.undo()
        docker_problem.cache_clear()
    assert broken.error is not None and broken.error.type == "SandboxUnavailableError"
    message = broken.error.message
    assert "sandbox 'docker' is not available: no Docker daemon answers" in message
    assert "start it" in message and "Nothing runs in its place" in message


def test_reuse_keeps_one_container_across_attempts_and_resets_the_workspace(project: Path) -> None:
    seen: list[tuple[str, list[str], str]] = []
    pods: list[int] = []

    @define_eval(fixture="fixtures/app", sandbox=docker_sandbox(image=BASE_IMAGE, reuse=True))
    async def reused(t: EvalContext) -> None:
        state = await t.sandbox.run_shell("cat /etc/hostname; ls -A /tmp $TMPDIR $HOME; cat app.py")
        labelled = containers("niceeval.eval=x.py::reused", "niceeval.role=workspace")
        pods.append(len(containers("niceeval.eval=x.py::reused")))
        seen.append((state.stdout.split("\n", 1)[0], labelled, state.stdout.split("\n", 1)[1]))
        await t.sandbox.run_shell("echo 'VALUE = 2' > app.py; touch left.txt /tmp/left $TMPDIR/left $HOME/left")
        t.check((await t.sandbox.diff()).added, equals(["left.txt"]))

    collect = Collect()
    options = SuiteOptions(runs=3, concurrency=3, exec=ExecOptions(timeout=120, root=project))
    anyio.run(run_suite, [EvalEntry(id="x.py::reused", spec=reused)], [], options, [collect])
    assert [r.outcome for r in collect.results_of("reused")] == ["passed"] * 3, [
        a.reason for r in collect.runs for a in r.assertions
    ]
    hosts = {host for host, _, _ in seen}
    assert len(seen) == 3 and len(hosts) == 1
    assert all(labelled == [next(iter(hosts))[:12]] for _, labelled, _ in seen)
    assert pods == [2, 2, 2]  # the workspace container and its network watcher, kept together
    assert all(listing.endswith("VALUE = 1\n") and "left" not in listing for _, _, listing in seen)
    assert containers("niceeval.eval=x.py::reused") == []
