"""The public face of niceeval.sandbox: pinned, so a change to it is a decision, not an accident."""

from __future__ import annotations

import niceeval.sandbox


def test_public_names_are_pinned() -> None:
    assert sorted(niceeval.sandbox.__all__) == [
        "CommandResult",
        "DEFAULT_HIDDEN",
        "DEFAULT_IGNORE",
        "DEFAULT_MAX_OUTPUT_BYTES",
        "Diff",
        "FileChange",
        "FixtureTestResult",
        "LARGE_FILE_BYTES",
        "LocalSandbox",
        "PytestRun",
        "Rename",
        "Sandbox",
        "SandboxPathError",
        "SkippedPath",
        "run_fixture_tests",
    ]


def test_every_public_name_is_importable() -> None:
    assert all(hasattr(niceeval.sandbox, name) for name in niceeval.sandbox.__all__)
