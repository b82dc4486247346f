"""Test-as-scoring: run a fixture's hidden `EVAL.py` (and scoring scripts) against the finished workspace.

Every pytest test becomes one `FixtureTestResult`; so does every script. Anything that keeps
pytest from reporting (a syntax error, no tests, a crash, the timeout) becomes one failed result
that says why, never an exception: the eval goes on and the failure is scored.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from niceeval._core.values import tail
from niceeval.sandbox._commands import CommandResult
from niceeval.sandbox._protocol import PytestRun, Sandbox

MAX_FAILURE_TEXT_CHARS = 4000
"""Failure texts are trimmed to their last this-many characters (where the error is)."""

_PYTEST_NO_TESTS_COLLECTED = 5


@dataclass(frozen=True, kw_only=True)
class FixtureTestResult:
    """One scoring step: a test of the hidden test file, or a scoring script."""

    test_id: str
    """`EVAL.py::test_name` (`EVAL.py::TestClass::test_name`, `EVAL.py::<collection>` when the file
    could not be run) or `script: <the script>`."""
    outcome: Literal["passed", "failed", "skipped"]
    failure_text: str = ""
    """What went wrong (pytest's short traceback, or the script's output), trimmed; the skip reason
    for a skipped test; empty when passed."""
    duration: float = 0.0
    """Seconds, as pytest or the script reported."""

    @property
    def passed(self) -> bool:
        """True when the test passed or the script exited 0."""
        return self.outcome == "passed"


async def run_fixture_tests(
    sandbox: Sandbox,
    eval_file: Path | None,
    *,
    scripts: Sequence[str] = (),
    timeout: float = 300.0,
    pytest_args: Sequence[str] = (),
) -> list[FixtureTestResult]:
    """Score the workspace: run each script, then the hidden tests, after the agent is done.

    Scripts run first so a build step can prepare what the tests check. Neither kind is recorded
    among the sandbox's `commands`: they are scoring, not the agent's actions.

    Args:
        sandbox: The workspace to score.
        eval_file: The fixture's hidden test file (e.g. `fixture / "EVAL.py"`); None to run only scripts.
        scripts: Shell scripts that must exit 0, e.g. `"npm run build"`.
        timeout: Seconds allowed for each script and for the whole pytest run.
        pytest_args: Extra pytest arguments, e.g. `["-p", "anyio"]` for async tests.

    Returns:
        One result per script, then one per test.

    Raises:
        FileNotFoundError: `eval_file` does not exist.
    """
    if eval_file is not None and not eval_file.is_file():
        raise FileNotFoundError(f"hidden test file {eval_file} does not exist")
    results = [
        _script_result(script, await sandbox.run_shell(script, timeout=timeout, record=False)) for script in scripts
    ]
    if eval_file is not None:
        run = await sandbox.run_pytest(eval_file, timeout=timeout, pytest_args=pytest_args)
        results.extend(_pytest_results(eval_file.name, run))
    return results


def _script_result(script: str, command: CommandResult) -> FixtureTestResult:
    failure_text = ""
    if not command.succeeded:
        failure_text = _trim(f"{command.error}\n{command.stdout}{command.stderr}".rstrip())
    return FixtureTestResult(
        test_id=f"script: {script}",
        outcome="passed" if command.succeeded else "failed",
        failure_text=failure_text,
        duration=command.duration,
    )


def _pytest_results(file_name: str, run: PytestRun) -> list[FixtureTestResult]:
    command = run.command
    if command.timed_out:
        return [_file_failure(file_name, "<timeout>", f"pytest {command.error}", command)]
    try:
        results = _parse_junit(file_name, run.junit_xml) if run.junit_xml else []
    except ElementTree.ParseError as error:
        return [_file_failure(file_name, "<report>", f"pytest's JUnit report is unreadable ({error})", command)]
    if results:
        return results
    if command.exit_code == _PYTEST_NO_TESTS_COLLECTED:
        return [_file_failure(file_name, "<collection>", f"no tests were found in {file_name}", command)]
    reason = f"pytest {command.error or 'exited'} without reporting any test"
    return [_file_failure(file_name, "<collection>", reason, command)]


def _file_failure(file_name: str, step: str, reason: str, command: CommandResult) -> FixtureTestResult:
    output = f"{command.stdout}{command.stderr}".strip()
    return FixtureTestResult(
        test_id=f"{file_name}::{step}",
        outcome="failed",
        failure_text=_trim(f"{reason}\n{output}".rstrip()),
        duration=command.duration,
    )


def _parse_junit(file_name: str, junit_xml: str) -> list[FixtureTestResult]:
    stem = file_name.removesuffix(".py")
    results: list[FixtureTestResult] = []
    for case in ElementTree.fromstring(junit_xml).iter("testcase"):
        classname = case.get("classname", "")
        if classname:
            # classname is "EVAL" or "EVAL.TestClass[.Nested]": the test file is always this one module.
            classes = classname.removeprefix(stem).strip(".").split(".")
            test_id = "::".join([file_name, *filter(None, classes), case.get("name", "")])
        else:
            test_id = f"{file_name}::<collection>"  # pytest reports collection errors with no classname
        results.append(_case_result(test_id, case, collection=not classname))
    return results


def _case_result(test_id: str, case: ElementTree.Element, *, collection: bool) -> FixtureTestResult:
    problems = [child for child in case if child.tag in ("failure", "error")]
    skipped = case.find("skipped")
    duration = float(case.get("time") or 0.0)
    if problems:
        text = "\n".join(child.text or child.get("message") or "" for child in problems)
        return FixtureTestResult(
            test_id=test_id,
            outcome="failed",
            failure_text=_trim(_error_lines(text) if collection else text),
            duration=duration,
        )
    if skipped is not None:
        reason = skipped.get("message", "")
        return FixtureTestResult(test_id=test_id, outcome="skipped", failure_text=reason, duration=duration)
    return FixtureTestResult(test_id=test_id, outcome="passed", duration=duration)


def _error_lines(text: str) -> str:
    """The `E   ` lines of a pytest traceback (the error itself), or all of it if there are none.

    A collection error's traceback is mostly pytest's own import machinery; its last `E` lines are
    the user's error (e.g. the SyntaxError with file, line and caret).
    """
    lines = [line[4:] for line in text.splitlines() if line.startswith("E   ") or line == "E"]
    return "\n".join(lines) if lines else text


def _trim(text: str) -> str:
    if len(text) <= MAX_FAILURE_TEXT_CHARS:
        return text
    return "[... trimmed]\n" + tail(text, MAX_FAILURE_TEXT_CHARS)
