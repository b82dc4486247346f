"""Sandboxes for evals of coding and file-editing agents: a workspace, its commands, its diff, its scoring.

`LocalSandbox` copies a fixture folder into a temp workspace (hiding `EVAL.py`), runs commands there
with a scrubbed environment and a timeout, diffs the workspace against the fixture, and scores it
by running the hidden tests with `run_fixture_tests`. It does not isolate; `BwrapSandbox` (bubblewrap
namespaces) and `DockerSandbox` (one container per eval run, declared with `docker_sandbox(...)`, with
`service(...)` containers beside it, or by a Compose file with `compose_sandbox(...)`) run the same workspace's
commands isolated: the system read-only, no network but allowed loopback endpoints, every attempt to reach another
address refused and recorded (`connection_attempts`). See `docs/sandbox.md`.

Design: docs/design/sandbox.md
"""

from niceeval.sandbox._bwrap import (
    BwrapSandbox,
    ProcessLimits,
    SandboxUnavailableError,
    bwrap_problem,
    network_watch_problem,
)
from niceeval.sandbox._commands import DEFAULT_MAX_OUTPUT_BYTES, CommandOptions, CommandResult
from niceeval.sandbox._diff import Diff, FileChange, Rename
from niceeval.sandbox._docker import DockerRun, DockerSandbox, prepare_docker_run
from niceeval.sandbox._docker_cli import DockerSandboxError, docker_problem
from niceeval.sandbox._docker_env import (
    ComposeEnvironment,
    ContainerLimits,
    DockerEnvironment,
    Service,
    compose_sandbox,
    docker_sandbox,
    service,
)
from niceeval.sandbox._docker_images import ResolvedImage, find_built_images
from niceeval.sandbox._docker_kept import (
    FoundSandbox,
    Pruned,
    enter_argv,
    find_sandbox,
    find_sandboxes,
    kept_diff,
    prune_sandboxes,
    sandbox_logs,
    stop_sandbox,
)
from niceeval.sandbox._docker_reuse import close_reused
from niceeval.sandbox._fixture_tests import FixtureTestResult, run_fixture_tests
from niceeval.sandbox._history import Author, Snapshot, Stretch, stretches_diff
from niceeval.sandbox._launch import LaunchOptions, ProcessLaunch
from niceeval.sandbox._network import ConnectionAttempt
from niceeval.sandbox._protocol import PytestRun, Sandbox, current_sandbox
from niceeval.sandbox._tree import LARGE_FILE_BYTES, SkippedPath
from niceeval.sandbox._workspace import DEFAULT_HIDDEN, DEFAULT_IGNORE, LocalSandbox, SandboxPathError

__all__ = [
    "Author",
    "DEFAULT_HIDDEN",
    "DEFAULT_IGNORE",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "LARGE_FILE_BYTES",
    "BwrapSandbox",
    "CommandOptions",
    "CommandResult",
    "ComposeEnvironment",
    "ConnectionAttempt",
    "ContainerLimits",
    "Diff",
    "DockerEnvironment",
    "DockerRun",
    "DockerSandbox",
    "DockerSandboxError",
    "FileChange",
    "FixtureTestResult",
    "FoundSandbox",
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
