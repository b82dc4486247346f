"""The sandbox around a sandbox eval: prepare the workspace, then score it by diff, scripts and hidden tests."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from niceeval._core.assertion import AssertionResult
from niceeval._core.errors import UsageError, error_info
from niceeval._core.events import EventLog
from niceeval._core.sandbox_kinds import SandboxKind
from niceeval._eval.context import RunState
from niceeval._eval.spec import EvalSpec
from niceeval.sandbox import CommandResult, FixtureTestResult, LocalSandbox, run_fixture_tests

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


def sandbox_kind(spec: EvalSpec, default: SandboxKind | None) -> SandboxKind:
    """The eval's sandbox, else the config's, else `bwrap` where it works and `local` elsewhere."""
    chosen = spec.sandbox or default
    if chosen is not None:
        return chosen
    from niceeval.sandbox import bwrap_problem

    return "local" if bwrap_problem() else "bwrap"


async def open_workspace(folder: Path, log: EventLog, spec: EvalSpec, settings: WorkspaceSettings) -> LocalSandbox:
    """Copy the (prepared) fixture into a fresh workspace; every command run there is recorded as a shell action.

    Raises:
        FixtureSetupError: The fixture's setup commands failed.
        SandboxUnavailableError: The sandbox kind cannot run here (bwrap missing, no Docker daemon).
    """
    kind = sandbox_kind(spec, settings.default)
    if spec.setup:
        from niceeval._run.fixture_setup import prepared_fixture

        # Setup is the eval author's own commands (installing dependencies needs the network): run unconfined.
        opener = LocalSandbox.create if kind != "docker" else _opener(kind, None)
        folder = await prepared_fixture(folder, spec.setup, kind, settings.cache, opener)

    def record(result: CommandResult) -> None:
        log.emit(result.to_action_event())

    return await _opener(kind, record)(folder)


def _opener(
    kind: SandboxKind, record: Callable[[CommandResult], None] | None
) -> Callable[[Path], Awaitable[LocalSandbox]]:
    from niceeval.sandbox import BwrapSandbox, DockerSandbox

    cls = {"local": LocalSandbox, "bwrap": BwrapSandbox, "docker": DockerSandbox}[kind]
    return functools.partial(cls.create, on_command=record)


@dataclass(frozen=True, kw_only=True)
class WorkspaceSettings:
    """The suite's sandbox settings: the config's default kind, and where prepared fixtures are cached."""

    default: SandboxKind | None = None
    cache: Path = Path(".niceeval/fixtures")


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


async def score_workspace(
    sandbox: LocalSandbox, spec: EvalSpec, folder: Path, state: RunState, location: str, *, errored: bool
) -> None:
    """Evaluate the diff assertions, then (unless the run already errored) scripts and the hidden EVAL.py."""
    diff = await sandbox.diff()
    state.workspace_diff = diff.text or None
    for handle in state.diff_scoped:
        try:
            state.assertions.append(handle.evaluate(diff))
        except UsageError as exc:
            state.usage_error = state.usage_error or error_info(exc)
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
