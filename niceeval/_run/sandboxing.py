"""The sandbox around a sandbox eval: prepare the workspace, then score it by diff, scripts and hidden tests."""

from __future__ import annotations

from pathlib import Path

from niceeval._core.assertion import AssertionResult
from niceeval._core.errors import UsageError, error_info
from niceeval._core.events import EventLog
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


async def open_workspace(folder: Path, log: EventLog) -> LocalSandbox:
    """Copy the fixture into a fresh workspace; every command run there is recorded as a shell action."""

    def record(result: CommandResult) -> None:
        log.emit(result.to_action_event())

    return await LocalSandbox.create(folder, on_command=record)


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
