"""The public face of niceeval.sandbox: pinned, so a change to it is a decision, not an accident."""

from __future__ import annotations

import niceeval.sandbox


def test_public_names_are_pinned() -> None:
    assert sorted(niceeval.sandbox.__all__) == [
        "BwrapSandbox",
        "CommandResult",
        "ContainerLimits",
        "DEFAULT_HIDDEN",
        "DEFAULT_IGNORE",
        "DEFAULT_MAX_OUTPUT_BYTES",
        "Diff",
        "DockerEnvironment",
        "DockerRun",
        "DockerSandbox",
        "DockerSandboxError",
        "FileChange",
        "FixtureTestResult",
        "FoundSandbox",
        "LARGE_FILE_BYTES",
        "LaunchOptions",
        "LocalSandbox",
        "ProcessLaunch",
        "ProcessLimits",
        "Pruned",
        "PytestRun",
        "Rename",
        "Sandbox",
        "SandboxPathError",
        "SandboxUnavailableError",
        "Service",
        "SkippedPath",
        "bwrap_problem",
        "close_reused",
        "current_sandbox",
        "docker_problem",
        "docker_sandbox",
        "enter_argv",
        "find_sandbox",
        "find_sandboxes",
        "kept_diff",
        "prepare_docker_run",
        "prune_sandboxes",
        "run_fixture_tests",
        "sandbox_logs",
        "service",
        "stop_sandbox",
    ]


def test_every_public_name_is_importable() -> None:
    assert all(hasattr(niceeval.sandbox, name) for name in niceeval.sandbox.__all__)
