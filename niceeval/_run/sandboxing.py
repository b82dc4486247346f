"""The sandbox around a sandbox eval: prepare the workspace, then score it by diff, scripts and hidden tests."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from niceeval._core.assertion import AssertionResult
from niceeval._core.errors import UsageError, error_info
from niceeval._core.events import EventLog
from niceeval._core.sandbox_kinds import SandboxChoice, SandboxDeclaration, SandboxKind
from niceeval._eval.config import sandbox_problem
from niceeval._eval.context import RunState
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval.agents._runtime import PerVariant
from niceeval.sandbox import CommandResult, ConnectionAttempt, FixtureTestResult, LocalSandbox, run_fixture_tests

_EVAL_FILE = "EVAL.py"
SCORING_TIMEOUT_S = 300.0


def fixture_dir(spec: EvalSpec, root: Path, where: str) -> Path:
    """The eval's fixture folder: beside the eval file first, then under the project root."""
    assert spec.fixture is not None
    for base in (spec.file.parent, root):
        folder = (base / spec.fixture).resolve()
        if folder.is_dir():
            return folder
    raise UsageError(
        f"{where}: fixture {spec.fixture!r} is not a folder beside the eval file or under the project root; "
        "create it or fix the path in @define_eval(fixture=...)."
    )


def sandbox_choice(entry: EvalEntry, default: SandboxChoice | PerVariant | None) -> SandboxKind | SandboxDeclaration:
    """The eval's sandbox, else the config's (`per_variant` ones built from the run's variant), else `bwrap` where
    it works and `local` elsewhere."""
    chosen = entry.spec.sandbox or default
    if isinstance(chosen, PerVariant):
        chosen = chosen.build(entry.variant)
        problem = sandbox_problem(chosen) if not isinstance(chosen, PerVariant) else "is a per_variant itself"
        if problem is not None:
            raise UsageError(f"per_variant(...) for sandbox=: the value its function returned {problem}")
    if chosen is not None:
        return chosen
    from niceeval.sandbox import bwrap_problem

    return "local" if bwrap_problem() else "bwrap"


class CommandLog:
    """Where a sandbox's commands are recorded as shell actions: one run's event log, or, for an eval group's
    shared sandbox, the log of the member running now (`None` between members: the group's setup and teardown)."""

    __slots__ = ("log",)

    def __init__(self, log: EventLog | None = None) -> None:
        self.log = log

    def __call__(self, result: CommandResult) -> None:
        if self.log is not None:
            self.log.emit(result.to_action_event())

    def attempt(self, attempt: ConnectionAttempt) -> None:
        """Record a connection attempt the sandbox refused as a `connection.attempt` event."""
        if self.log is not None:
            self.log.emit(attempt.to_event())


@dataclass(frozen=True, slots=True)
class SharedWorkspace:
    """An eval group's sandbox, open for the whole attempt: a member's run uses it instead of opening its own."""

    sandbox: LocalSandbox
    commands: CommandLog
    """Switched to each member's log while it runs."""


async def open_workspace(
    folder: Path, commands: CommandLog, entry: EvalEntry, attempt: int, settings: WorkspaceSettings
) -> LocalSandbox:
    """Copy the (prepared) fixture into a fresh workspace; every command run there is recorded as a shell action.

    Raises:
        FixtureSetupError: The fixture's setup commands failed.
        SandboxUnavailableError: The sandbox kind cannot run here (bwrap missing, no Docker daemon).
        DockerSandboxError: A Docker sandbox's image or containers did not come up.
    """
    choice = sandbox_choice(entry, settings.default)
    kind, opener = await _opener(choice, entry, attempt, settings.root)
    if entry.spec.setup:
        from niceeval._run.fixture_setup import prepared_fixture

        # Setup is the eval author's own commands (installing dependencies needs the network): run unconfined,
        # unless the eval asked for a container (its image is the environment the setup prepares for).
        setup_opener = LocalSandbox.create if isinstance(choice, str) and choice != "docker" else opener
        folder = await prepared_fixture(folder, entry.spec.setup, kind, settings.cache, setup_opener)

    return await opener(folder, on_command=commands, on_attempt=commands.attempt)


async def _opener(
    choice: SandboxKind | SandboxDeclaration, entry: EvalEntry, attempt: int, root: Path
) -> tuple[str, Callable[..., Awaitable[LocalSandbox]]]:
    """What opens the sandbox, and the kind as the fixture cache keys it (a Docker sandbox by its image)."""
    from niceeval.sandbox import (
        BwrapSandbox,
        ComposeEnvironment,
        DockerEnvironment,
        DockerSandbox,
        docker_sandbox,
        prepare_docker_run,
    )

    if choice == "local":
        return "local", LocalSandbox.create
    if choice == "bwrap":
        return "bwrap", BwrapSandbox.create
    if choice == "docker":
        choice = docker_sandbox()
    if not isinstance(choice, DockerEnvironment | ComposeEnvironment):
        raise UsageError(f"sandbox={choice!r:.80} is not a sandbox kind (local, bwrap, docker) or declaration.")
    bases = (entry.spec.file.parent, root)
    run = await prepare_docker_run(choice, bases=bases, eval_id=entry.id, attempt=attempt)
    return f"docker:{run.image.id}", functools.partial(DockerSandbox.create, run=run)


async def close_sandboxes() -> None:
    """At the end of a suite: remove the containers kept for reuse across attempts (`docker_sandbox(reuse=True)`)."""
    from niceeval.sandbox import close_reused

    await close_reused()


@dataclass(frozen=True, kw_only=True)
class WorkspaceSettings:
    """The suite's sandbox settings: the config's default kind, and where prepared fixtures are cached."""

    default: SandboxChoice | PerVariant | None = None
    cache: Path = Path(".niceeval/fixtures")
    root: Path = Path()
    """The project root: a Docker sandbox's relative paths are looked up there after the eval file's folder."""


def _as_assertion(test: FixtureTestResult, location: str) -> AssertionResult:
    return AssertionResult(
        name=test.test_id,
        severity="gate",
        score=1.0 if test.passed else 0.0,
        threshold=1.0,
        state="passed" if test.outcome != "failed" else "failed",
        reason=test.failure_text,
        location=location,
    )


async def score_diff(sandbox: LocalSandbox, state: RunState) -> None:
    """Record the connection attempts not recorded yet (a launched agent's) and the workspace's diff, and evaluate
    the diff assertions (`t.file_changed`, ...) over it."""
    await sandbox.collect_connection_attempts()
    diff = await sandbox.diff()
    state.workspace_diff = diff.text or None
    for handle in state.diff_scoped:
        try:
            state.assertions.append(handle.evaluate(diff))
        except UsageError as exc:
            state.usage_error = state.usage_error or error_info(exc)


async def score_workspace(
    sandbox: LocalSandbox, spec: EvalSpec, folder: Path, state: RunState, location: str, *, errored: bool
) -> None:
    """Evaluate the diff assertions, then (unless the run already errored) scripts and the hidden EVAL.py."""
    await score_diff(sandbox, state)
    if errored:
        return
    eval_file = folder / _EVAL_FILE
    validation = spec.validation or ("pytest" if eval_file.is_file() else "none")
    if validation == "none" and not spec.scripts:
        return
    tests = await run_fixture_tests(
        sandbox,
        eval_file if validation == "pytest" else None,
        scripts=spec.scripts,
        timeout=SCORING_TIMEOUT_S,
    )
    state.assertions.extend(_as_assertion(test, location) for test in tests)
