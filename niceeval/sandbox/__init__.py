"""Sandboxes for evals of coding and file-editing agents: a workspace, its commands, its diff, its scoring.

`LocalSandbox` copies a fixture folder into a temp workspace (hiding `EVAL.py`), runs commands there
with a scrubbed environment and a timeout, diffs the workspace against the fixture, and scores it
by running the hidden tests with `run_fixture_tests`. It is not a container: see `docs/sandbox.md`
for what it does not isolate, and the `Sandbox` protocol for plugging in a container-backed one.
"""

from niceeval.sandbox._commands import DEFAULT_MAX_OUTPUT_BYTES, CommandResult
from niceeval.sandbox._diff import Diff, FileChange, Rename
from niceeval.sandbox._fixture_tests import FixtureTestResult, run_fixture_tests
from niceeval.sandbox._protocol import PytestRun, Sandbox
from niceeval.sandbox._tree import LARGE_FILE_BYTES, SkippedPath
from niceeval.sandbox._workspace import DEFAULT_HIDDEN, DEFAULT_IGNORE, LocalSandbox, SandboxPathError

__all__ = [
    "DEFAULT_HIDDEN",
    "DEFAULT_IGNORE",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "LARGE_FILE_BYTES",
    "CommandResult",
    "Diff",
    "FileChange",
    "FixtureTestResult",
    "LocalSandbox",
    "PytestRun",
    "Rename",
    "Sandbox",
    "SandboxPathError",
    "SkippedPath",
    "run_fixture_tests",
]
