"""The `Sandbox` protocol: what evals, agents and scoring need from a workspace, whoever provides it.

`LocalSandbox` implements it with a temp directory and local processes. A container-backed
provider implements the same methods against a container; nothing above this seam changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Protocol, Unpack

from niceeval._core.sandbox_kinds import CURRENT_SANDBOX
from niceeval.sandbox._commands import CommandOptions, CommandResult
from niceeval.sandbox._diff import Diff
from niceeval.sandbox._history import Author, Snapshot
from niceeval.sandbox._launch import LaunchOptions, ProcessLaunch
from niceeval.sandbox._network import ConnectionAttempt


@dataclass(frozen=True, kw_only=True)
class PytestRun:
    """The raw outcome of running a hidden test file against the workspace."""

    command: CommandResult
    """The pytest command itself (not recorded among the sandbox's `commands`)."""
    junit_xml: str | None
    """pytest's JUnit XML report; None if pytest wrote none (it crashed, or was killed)."""


class Sandbox(Protocol):
    """A workspace an agent works in, which the eval then inspects and scores.

    Paths given to its methods are relative to the workspace root (absolute ones must lie inside
    it); one that leads out of the workspace, also through a symlink, raises `SandboxPathError`.
    """

    @property
    def path(self) -> PurePath:
        """The workspace root, as commands in the sandbox see it."""
        ...

    @property
    def commands(self) -> Sequence[CommandResult]:
        """Every recorded command run so far, in the order they finished."""
        ...

    @property
    def connection_attempts(self) -> Sequence[ConnectionAttempt]:
        """Every attempt to reach an address outside the sandbox that it refused and recorded so far, in order."""
        ...

    async def read_text(self, rel: str | PurePath) -> str:
        """The UTF-8 text of a workspace file."""
        ...

    async def write_text(self, rel: str | PurePath, text: str) -> None:
        """Write a workspace file as UTF-8, creating missing parent directories."""
        ...

    async def exists(self, rel: str | PurePath) -> bool:
        """True if the path exists in the workspace."""
        ...

    async def run_command(self, cmd: str, args: Sequence[str] = (), **options: Unpack[CommandOptions]) -> CommandResult:
        """Run a program (no shell) in the workspace; see `LocalSandbox.run_command`."""
        ...

    async def run_shell(self, script: str, **options: Unpack[CommandOptions]) -> CommandResult:
        """Run a `sh -c` script in the workspace; see `LocalSandbox.run_shell`."""
        ...

    async def diff(self, *, author: Author | None = None) -> Diff:
        """What changed in the workspace since the baseline; with `author` (`"agent"`, `"eval"`), only theirs."""
        ...

    async def snapshot(self) -> Snapshot:
        """The workspace now, with its text, to diff a stretch of the run against later (`stretches_diff`)."""
        ...

    def eval_writes(self) -> AbstractAsyncContextManager[None]:
        """Mark what happens inside as the eval's own writes (`t.sandbox` does), apart from the agent's."""
        ...

    async def launch(self, argv: Sequence[str], options: LaunchOptions) -> ProcessLaunch:
        """How to start a long-running process (an agent's CLI) in the workspace; the caller runs and kills it."""
        ...

    async def run_pytest(self, test_file: Path, *, timeout: float, pytest_args: Sequence[str] = ()) -> PytestRun:
        """Run a host test file with pytest, from outside the workspace, with the workspace as cwd.

        The file must not become visible to the agent's tree (nor to the diff), and the workspace's
        own `conftest.py` and pytest configuration must not apply.
        """
        ...

    async def close(self, *, keep: bool = False) -> Path | None:
        """Release the workspace; with `keep=True` leave it on disk and return where it is."""
        ...


def current_sandbox() -> Sandbox | None:
    """The sandbox of the eval being run (`@define_eval(fixture=...)`), for agents that run processes in it."""
    sandbox: Sandbox | None = CURRENT_SANDBOX.get()
    return sandbox
