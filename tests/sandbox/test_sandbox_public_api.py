"""The public face of niceeval.sandbox: pinned, so a change to it is a decision, not an accident."""

from __future__ import annotations

import niceeval.sandbox


def test_public_names_are_pinned() -> None:
    assert sorted(niceeval.sandbox.__all__) == [
        "Author",
        "BwrapSandbox",
        "CommandOptions",
        "CommandResult",
        "ComposeEnvironment",
        "ConnectionAttempt",
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
        "ResolvedImage",
        "Sandbox",
        "SandboxPathError",
        "SandboxUnavailableError",
        "Service",
        "SkippedPath",
        "Snapshot",
        "Stretch",
        "bwrap_problem",
        "close_reused",
        "compose_sandbox",
        "current_sandbox",
        "docker_problem",
        "docker_sandbox",
        "enter_argv",
        "find_built_images",
        "find_sandbox",
        "find_sandboxes",
        "kept_diff",
        "network_watch_problem",
        "prepare_docker_run",
        "prune_sandboxes",
        "run_fixture_tests",
        "sandbox_logs",
        "service",
        "stop_sandbox",
        "stretches_diff",
    ]


def test_every_public_name_is_importable() -> None:
    assert all(hasattr(niceeval.sandbox, name) for name in niceeval.sandbox.__all__)


def test_the_command_options_are_declared_once_and_taken_by_every_sandbox() -> None:
    """`cwd`, `timeout`, `env`, `record` live on `CommandOptions`; the protocol, `LocalSandbox` and `t.sandbox`
    take them as `**options: Unpack[CommandOptions]` (only `t.sandbox` adds `check`)."""
    import inspect

    from niceeval._eval.checked_sandbox import CheckedSandbox

    owners = (niceeval.sandbox.Sandbox, niceeval.sandbox.LocalSandbox, CheckedSandbox)
    for owner in owners:
        for method in ("run_command", "run_shell"):
            params = inspect.signature(getattr(owner, method)).parameters.values()
            keywords = {p.name: str(p.annotation) for p in params if p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD)}
            own = {"check": "bool"} if owner is CheckedSandbox else {}
            assert keywords == {**own, "options": "Unpack[CommandOptions]"}, (owner, method)
    assert sorted(niceeval.sandbox.CommandOptions.__optional_keys__) == ["cwd", "env", "record", "timeout"]
