"""`t.sandbox` as the eval sees it: the run's sandbox, with every coroutine it returns checked for an `await`."""

from __future__ import annotations

from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from niceeval._core.awaits import tracked

if TYPE_CHECKING:
    from niceeval.sandbox import CommandResult, Diff, PytestRun, Sandbox


class CheckedSandbox:
    """Delegates to the run's `Sandbox`; a call left without `await` fails the run naming its line."""

    __slots__ = ("_inner",)

    def __init__(self, inner: Sandbox) -> None:
        self._inner = inner

    @property
    def path(self) -> PurePath:
        """The workspace root."""
        return self._inner.path

    @property
    def commands(self) -> Sequence[CommandResult]:
        """Every recorded command run so far."""
        return self._inner.commands

    def read_text(self, rel: str | PurePath) -> Coroutine[Any, Any, str]:
        """The UTF-8 text of a workspace file."""
        return tracked(self._inner.read_text(rel), "t.sandbox.read_text(...)")

    def write_text(self, rel: str | PurePath, text: str) -> Coroutine[Any, Any, None]:
        """Write a workspace file as UTF-8, creating missing parent directories."""
        return tracked(self._inner.write_text(rel, text), "t.sandbox.write_text(...)")

    def exists(self, rel: str | PurePath) -> Coroutine[Any, Any, bool]:
        """True if the path exists in the workspace."""
        return tracked(self._inner.exists(rel), "t.sandbox.exists(...)")

    def run_command(
        self,
        cmd: str,
        args: Sequence[str] = (),
        *,
        cwd: str | PurePath | None = None,
        timeout: float = 60.0,
        env: Mapping[str, str] | None = None,
        record: bool = True,
    ) -> Coroutine[Any, Any, CommandResult]:
        """Run a program (no shell) in the workspace."""
        coro = self._inner.run_command(cmd, args, cwd=cwd, timeout=timeout, env=env, record=record)
        return tracked(coro, "t.sandbox.run_command(...)")

    def run_shell(
        self,
        script: str,
        *,
        cwd: str | PurePath | None = None,
        timeout: float = 60.0,
        env: Mapping[str, str] | None = None,
        record: bool = True,
    ) -> Coroutine[Any, Any, CommandResult]:
        """Run a `sh -c` script in the workspace."""
        coro = self._inner.run_shell(script, cwd=cwd, timeout=timeout, env=env, record=record)
        return tracked(coro, "t.sandbox.run_shell(...)")

    def diff(self) -> Coroutine[Any, Any, Diff]:
        """What changed in the workspace since the baseline."""
        return tracked(self._inner.diff(), "t.sandbox.diff()")

    def run_pytest(
        self, test_file: Path, *, timeout: float, pytest_args: Sequence[str] = ()
    ) -> Coroutine[Any, Any, PytestRun]:
        """Run a host test file with pytest against the workspace."""
        coro = self._inner.run_pytest(test_file, timeout=timeout, pytest_args=pytest_args)
        return tracked(coro, "t.sandbox.run_pytest(...)")

    def close(self, *, keep: bool = False) -> Coroutine[Any, Any, Path | None]:
        """Release the workspace (the runner does this after the eval)."""
        return tracked(self._inner.close(keep=keep), "t.sandbox.close()")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)  # what a particular sandbox offers beyond the protocol

    def __repr__(self) -> str:
        return repr(self._inner)
