"""Sandbox evals pick their sandbox (`sandbox=` or the config; bwrap where it works), prepare fixtures once, and keep
the workspaces `--keep-sandbox` asks for."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from niceeval import EvalContext, UsageError, define_eval
from niceeval._core.results import RunResult
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.expect import equals
from niceeval.sandbox import bwrap_problem, docker_problem


@pytest.fixture
def project(tmp_path: Path) -> Path:
    fixture = tmp_path / "fixtures" / "app"
    fixture.mkdir(parents=True)
    (fixture / "app.py").write_text("VALUE = 1\n")
    return tmp_path


def run(spec: EvalSpec, root: Path, **options: object) -> RunResult:
    entry = EvalEntry(id=f"x.py::{spec.name}", spec=spec)
    return anyio.run(execute, entry, 0, ExecOptions(timeout=60, root=root, **options))  # type: ignore[arg-type]


def needs_bwrap() -> None:
    problem = bwrap_problem()
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {problem}", pytrace=False)
        pytest.skip(problem)


def escape_attempt(target: Path) -> EvalSpec:
    @define_eval(fixture="fixtures/app")
    async def writes_outside(t: EvalContext) -> None:
        result = await t.sandbox.run_shell(f"echo escaped > {target}")
        t.check(result.exit_code, equals(0))

    return writes_outside


def test_bwrap_is_the_default_where_it_works_and_blocks_a_write_outside(project: Path) -> None:
    needs_bwrap()
    target = project / "escaped.txt"
    result = run(escape_attempt(target), project)
    assert result.error is None and result.outcome == "failed" and not target.exists()
    (shell,) = [e for e in result.events if e.type == "action.called"]
    assert (shell.kind, shell.status) == ("shell", "failed")


def test_the_local_sandbox_does_not_isolate(project: Path) -> None:
    target = project / "escaped.txt"
    result = run(escape_attempt(target), project, sandbox="local")
    assert result.outcome == "passed" and target.read_text() == "escaped\n"


def test_the_evals_own_sandbox_wins_over_the_config(project: Path) -> None:
    target = project / "escaped.txt"

    @define_eval(fixture="fixtures/app", sandbox="local")
    async def local(t: EvalContext) -> None:
        await t.sandbox.run_shell(f"echo escaped > {target}")

    run(local, project, sandbox="bwrap")
    assert target.exists()


def test_sandbox_options_are_checked_where_they_are_written() -> None:
    with pytest.raises(UsageError, match=r"sandbox=\.\.\.\) is one of local, bwrap, docker; got 'vm'"):
        define_eval(fixture="f", sandbox="vm")  # type: ignore[call-overload]
    with pytest.raises(UsageError, match="give fixture= too"):
        define_eval(sandbox="bwrap")
    with pytest.raises(UsageError, match="list of shell commands"):
        define_eval(fixture="f", setup="npm ci")  # type: ignore[call-overload]


def test_docker_runs_where_a_daemon_answers(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = docker_problem()
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {problem}", pytrace=False)
        pytest.skip(f"no Docker here: {problem}")
    monkeypatch.setenv("NICEEVAL_DOCKER_IMAGE", "niceeval-base:bookworm")  # no registry to pull the default from
    result = run(escape_attempt(project / "escaped.txt"), project, sandbox="docker")
    assert result.error is None and result.outcome == "failed" and not (project / "escaped.txt").exists()


def test_a_docker_eval_without_docker_is_errored_with_the_reason(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{project}/no-docker.sock")
    docker_problem.cache_clear()
    try:
        result = run(escape_attempt(project / "escaped.txt"), project, sandbox="docker")
    finally:
        monkeypatch.undo()
        docker_problem.cache_clear()
    assert result.error is not None and result.error.type == "SandboxUnavailableError"
    assert "sandbox 'docker' is not available" in result.error.message


def counting_setup(project: Path, command: str) -> EvalSpec:
    counter = project / "setups.log"

    @define_eval(fixture="fixtures/app", setup=[f"echo ran >> {counter}", command], sandbox="local")
    async def prepared(t: EvalContext) -> None:
        t.check(await t.sandbox.read_text("built.txt"), equals("built\n"))
        await t.sandbox.write_text("app.py", "VALUE = 2\n")

    return prepared


def test_setup_runs_once_per_fixture_content_and_is_the_baseline(project: Path) -> None:
    spec = counting_setup(project, "echo built > built.txt")
    first, second = run(spec, project), run(spec, project)
    assert (first.outcome, second.outcome) == ("passed", "passed")
    assert (project / "setups.log").read_text() == "ran\n"
    assert first.workspace_diff is not None and "built.txt" not in first.workspace_diff
    assert "+VALUE = 2" in first.workspace_diff
    (project / "fixtures" / "app" / "app.py").write_text("VALUE = 10\n")  # new content: prepared again
    assert run(spec, project).outcome == "passed"
    assert (project / "setups.log").read_text() == "ran\nran\n"


def test_a_failing_setup_fails_once_and_errors_every_run_of_the_fixture(project: Path) -> None:
    spec = counting_setup(project, "echo 'cannot reach the registry' >&2; exit 7")
    results = [run(spec, project) for _ in range(3)]
    assert (project / "setups.log").read_text() == "ran\n"
    for result in results:
        assert result.error is not None and result.error.type == "FixtureSetupError"
        assert "exited with status 7" in result.error.message and "cannot reach the registry" in result.error.message
        assert result.assertions == []


@pytest.mark.parametrize(("keep", "kept_passed", "kept_failed"), [("failed", False, True), ("all", True, True)])
def test_keep_sandbox_keeps_what_it_is_asked_to(project: Path, keep: str, kept_passed: bool, kept_failed: bool) -> None:
    @define_eval(fixture="fixtures/app", sandbox="local")
    async def passes(t: EvalContext) -> None:
        t.check(1, equals(1))

    @define_eval(fixture="fixtures/app", sandbox="local")
    async def fails(t: EvalContext) -> None:
        t.check(1, equals(2))

    passed, failed = run(passes, project, keep_sandbox=keep), run(fails, project, keep_sandbox=keep)
    assert (passed.sandbox_path is not None, failed.sandbox_path is not None) == (kept_passed, kept_failed)
    assert failed.sandbox_path is not None and (Path(failed.sandbox_path) / "app.py").is_file()
