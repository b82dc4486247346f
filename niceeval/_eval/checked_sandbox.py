"""`t.sandbox` as the eval sees it: the run's sandbox, with every coroutine it returns checked for an `await`, and
every write or command of the eval's kept apart from the agent's (`t.sandbox.diff(author="agent")`)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from niceeval._core.awaits import tracked
from niceeval._core.errors import NiceevalError, UsageError

if TYPE_CHECKING:
    from niceeval.sandbox import (
        Author,
        CommandOptions,
        CommandResult,
        ConnectionAttempt,
        Diff,
        PytestRun,
        Sandbox,
        Snapshot,
    )

T = TypeVar("T")


class CheckedSandbox:
    """Delegates to the run's `Sandbox`; a call left without `await` fails the run naming its line, and what a write
    or command changes is the eval's (`diff(author="eval")`), not the agent's."""

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

    @property
    def connection_attempts(self) -> Sequence[ConnectionAttempt]:
        """Every attempt to reach an address outside the sandbox it refused, recorded so far."""
        return self._inner.connection_attempts

    def read_text(self, rel: str | PurePath) -> Coroutine[Any, Any, str]:
        """The UTF-8 text of a workspace file."""
        return tracked(self._inner.read_text(rel), "t.sandbox.read_text(...)")

    def write_text(self, rel: str | PurePath, text: str) -> Coroutine[Any, Any, None]:
        """Write a workspace file as UTF-8, creating missing parent directories."""
        return tracked(self._by_eval(lambda: self._inner.write_text(rel, text)), "t.sandbox.write_text(...)")

    def exists(self, rel: str | PurePath) -> Coroutine[Any, Any, bool]:
        """True if the path exists in the workspace."""
        return tracked(self._inner.exists(rel), "t.sandbox.exists(...)")

    def read_bytes(self, rel: str | PurePath) -> Coroutine[Any, Any, bytes]:
        """The bytes of a workspace file."""
        return tracked(self._bytes_api("read_bytes")(rel), "t.sandbox.read_bytes(...)")

    def write_bytes(self, rel: str | PurePath, data: bytes) -> Coroutine[Any, Any, None]:
        """Write a workspace file's bytes, creating missing parent directories."""
        write = self._bytes_api("write_bytes")
        return tracked(self._by_eval(lambda: write(rel, data)), "t.sandbox.write_bytes(...)")

    def _bytes_api(self, name: str) -> Any:
        method = getattr(self._inner, name, None)
        if method is None:
            raise UsageError(f"this sandbox ({type(self._inner).__name__}) has no {name}(); use read_text/write_text.")
        return method

    def run_command(
        self, cmd: str, args: Sequence[str] = (), *, check: bool = False, **options: Unpack[CommandOptions]
    ) -> Coroutine[Any, Any, CommandResult]:
        """Run a program (no shell) in the workspace (`cwd`, `timeout`, `env`, `record`: `CommandOptions`). With
        `check=True`, a command that exits non-zero (or times out) raises `CommandFailed` with its output, ending
        the eval there."""
        run = functools.partial(self._inner.run_command, cmd, args, **options)
        return tracked(self._by_eval(lambda: _checked(run()) if check else run()), "t.sandbox.run_command(...)")

    def run_shell(
        self, script: str, *, check: bool = False, **options: Unpack[CommandOptions]
    ) -> Coroutine[Any, Any, CommandResult]:
        """Run a `sh -c` script in the workspace (`check=True`: a failure raises `CommandFailed`)."""
        run = functools.partial(self._inner.run_shell, script, **options)
        return tracked(self._by_eval(lambda: _checked(run()) if check else run()), "t.sandbox.run_shell(...)")

    async def _by_eval(self, work: Callable[[], Awaitable[T]]) -> T:
        async with self._inner.eval_writes():
            return await work()

    @property
    def diff(self) -> DiffCall:
        """What changed in the workspace since the baseline: `await t.sandbox.diff()`; only the agent's changes,
        without the eval's own writes through `t.sandbox`: `await t.sandbox.diff(author="agent")`."""
        return DiffCall(self._inner)

    def snapshot(self) -> Coroutine[Any, Any, Snapshot]:
        """The workspace now, with its text (what a turn's diff starts and ends with)."""
        return tracked(self._inner.snapshot(), "t.sandbox.snapshot()")

    def eval_writes(self) -> AbstractAsyncContextManager[None]:
        """Mark what happens inside as the eval's own writes (every write and command of `t.sandbox` is)."""
        return self._inner.eval_writes()

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


class CommandFailed(NiceevalError):
    """`run_command(..., check=True)` (or `run_shell`) exited non-zero or timed out; the message has its output."""

    def __init__(self, result: CommandResult) -> None:
        how = "timed out" if result.timed_out else f"exited {result.exit_code}"
        output = (result.stdout[-1500:] + "\n" + result.stderr[-1500:]).strip()
        super().__init__(f"{result.command} {how}" + (f":\n{output}" if output else " with no output"))
        self.result = result


async def _checked(coro: Coroutine[Any, Any, CommandResult]) -> CommandResult:
    result = await coro
    if result.exit_code != 0 or result.timed_out:
        raise CommandFailed(result)
    return result


class DiffCall:
    """`t.sandbox.diff`: call and await it. Reading an attribute of it (`t.sandbox.diff.is_empty()`, as in the
    TypeScript guide) teaches the Python form instead of failing with "'function' object has no attribute"."""

    __slots__ = ("_inner",)

    def __init__(self, inner: Sandbox) -> None:
        self._inner = inner

    def __call__(self, *, author: Author | None = None) -> Coroutine[Any, Any, Diff]:
        if author is not None and author not in ("agent", "eval"):
            raise UsageError(
                f"t.sandbox.diff(author={author!r}): the author is 'agent' (every change but the eval's own writes "
                "through t.sandbox) or 'eval' (only those); leave it out for every change."
            )
        return tracked(self._inner.diff(author=author), "t.sandbox.diff()")

    def __getattr__(self, name: str) -> Any:
        raise UsageError(
            f"t.sandbox.diff.{name}: the diff is computed when awaited; write (await t.sandbox.diff()).{name}"
            + ("()" if name in ("is_empty", "get", "matches", "change") else "")
            + ", or assert it with t.no_changes() / t.changed_paths([...]) / t.file_changed(path)."
        )
