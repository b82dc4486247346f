"""Running one command in the workspace: scrubbed environment, timeout, capped output, no leftovers.

Each command starts its own session (so its own process group). When the command ends, times out
or is cancelled, the whole group is killed: background jobs it left behind do not outlive it.
"""

from __future__ import annotations

import difflib
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePath
from typing import Literal, TypedDict

import anyio
from anyio.abc import ByteReceiveStream

from niceeval._core.events import ActionCalledEvent
from niceeval._core.values import STREAM_MARGIN, head_of_stream

DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024
"""How much of stdout and of stderr (each) a command result keeps."""

DEFAULT_TIMEOUT = 60.0
"""Seconds a command may run when its `timeout=` is not given."""


class CommandOptions(TypedDict, total=False):
    """How `run_command` and `run_shell` run a command: the same keywords on every sandbox and on `t.sandbox`.

    Declared once here; the `Sandbox` protocol, `LocalSandbox` and `t.sandbox` take them as `**options`.
    """

    cwd: str | PurePath | None
    """Working directory relative to the workspace root; the root by default."""
    timeout: float
    """Seconds before the command and its whole process group are killed; 60 by default."""
    env: Mapping[str, str] | None
    """Variables to add to the scrubbed environment (e.g. an API key the command needs)."""
    record: bool
    """Add the result to `commands` and report it (True by default); scoring runs pass False."""


def command_options(given: CommandOptions, where: str) -> CommandOptions:
    """`given`, checked: `**options` takes any keyword, so one that is no option is the `TypeError` Python would
    raise, naming the closest option."""
    known = sorted(CommandOptions.__optional_keys__)
    for name in given:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            guess = f"did you mean {close[0]!r}? " if close else ""
            raise TypeError(
                f"{where}() got an unexpected keyword argument {name!r}; {guess}Its options: {', '.join(known)}."
            )
    return given


# After the command's process group is gone, how long to wait for its pipes to close. Only a
# process that left the group (setsid) can hold them open longer, and it gets cut off.
_DRAIN_GRACE_SECONDS = 1.0


@dataclass(frozen=True, kw_only=True)
class CommandResult:
    """One finished command: what ran, where, how it ended and what it printed.

    `to_action_event()` turns it into the `action.called` event (kind `shell`) of the run's stream.
    """

    command: str
    """The command line as a shell would read it (`shlex.join` of program and args; the script for
    `run_shell`)."""
    program: str
    args: tuple[str, ...]
    cwd: str
    """Working directory relative to the workspace root (`.` for the root)."""
    exit_code: int | None
    """The exit status; negative when killed by a signal (-N); None when it timed out."""
    stdout: str
    stderr: str
    duration: float
    """Wall-clock seconds from start to the end of its output."""
    timeout: float
    """The limit it ran under, in seconds."""
    started_at: datetime
    timed_out: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False

    @property
    def succeeded(self) -> bool:
        """True when it exited with status 0 within its timeout."""
        return self.exit_code == 0 and not self.timed_out

    @property
    def status(self) -> Literal["success", "failed"]:
        """`success` or `failed`, as in an `action.called` event."""
        return "success" if self.succeeded else "failed"

    @property
    def error(self) -> str | None:
        """Why it failed, in a few words; None when it succeeded."""
        if self.timed_out:
            return f"timed out after {self.timeout:g}s"
        if self.exit_code is not None and self.exit_code < 0:
            return f"killed by signal {-self.exit_code}"
        return None if self.exit_code == 0 else f"exited with status {self.exit_code}"

    def to_action_event(self) -> ActionCalledEvent:
        """This command as an `action.called` event of kind `shell`, named after the program."""
        return ActionCalledEvent(
            name=self.program,
            kind="shell",
            input={"command": self.command, "args": list(self.args), "cwd": self.cwd},
            status=self.status,
            output={"stdout": self.stdout, "stderr": self.stderr, "duration": self.duration},
            error=self.error,
            exit_code=self.exit_code,
            duration=round(self.duration, 3),
        )


@dataclass(frozen=True, kw_only=True)
class CommandSpec:
    """Everything needed to start one command; built by the sandbox, which has checked `cwd`."""

    argv: tuple[str, ...]
    command: str
    cwd: Path
    cwd_label: str
    env: Mapping[str, str]
    timeout: float
    max_output_bytes: int
    wrapped: tuple[str, ...] | None = None
    """What actually runs, when the sandbox wraps `argv` (in `bwrap ... --`); results still name `argv`."""


def scrubbed_env(home: Path, tmp: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A minimal environment: nothing from the parent but PATH and LANG, so no API keys leak.

    Args:
        home: Directory for HOME, so tools do not read or write the user's dotfiles.
        tmp: Directory for TMPDIR.
        extra: Variables to add or override, given explicitly by the caller.
    """
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "TERM": "dumb",
        # Keeps __pycache__ directories out of the workspace, and so out of the diff.
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.update(extra or {})
    return env


class _CappedOutput:
    """Collects a stream up to `limit` bytes and keeps reading (and counting) past it.

    Reading on after the cap matters: a child blocked on a full pipe would never exit.
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._chunks: list[bytes] = []
        self._kept = 0
        """Bytes kept: up to the limit and `STREAM_MARGIN` past it, for a secret the cap cuts to be found whole."""
        self.total = 0

    async def drain(self, stream: ByteReceiveStream | None) -> None:
        if stream is None:
            return
        async for chunk in stream:
            self.total += len(chunk)
            room = self._limit + STREAM_MARGIN - self._kept
            if room > 0:
                self._chunks.append(chunk[:room])
                self._kept += min(room, len(chunk))

    @property
    def truncated(self) -> bool:
        return self.total > self._limit

    def text(self) -> str:
        data = b"".join(self._chunks)
        text = data.decode("utf-8", errors="replace")
        if not self.truncated:
            return text
        shown = len(data[: self._limit].decode("utf-8", errors="replace"))
        note = f"\n[niceeval: output truncated: kept {self._limit} of {self.total} bytes]\n"
        return head_of_stream(text, shown, cut=self.total > self._kept) + note


async def run_process(spec: CommandSpec) -> CommandResult:
    """Run `spec` to completion or timeout; a program that cannot start gives exit status 127 or 126."""
    started_at = datetime.now(UTC)
    start = time.monotonic()
    try:
        process = await anyio.open_process(
            list(spec.wrapped or spec.argv),
            stdin=subprocess.DEVNULL,
            cwd=spec.cwd,
            env=dict(spec.env),
            start_new_session=True,
        )
    except OSError as error:
        # As a shell reports it: 127 for not found, 126 for found but not executable.
        return CommandResult(
            command=spec.command,
            program=spec.argv[0],
            args=spec.argv[1:],
            cwd=spec.cwd_label,
            exit_code=127 if isinstance(error, FileNotFoundError) else 126,
            stdout="",
            stderr=f"niceeval: cannot run {spec.argv[0]!r}: {error.strerror or error}\n",
            duration=time.monotonic() - start,
            timeout=spec.timeout,
            started_at=started_at,
        )
    stdout, stderr = _CappedOutput(spec.max_output_bytes), _CappedOutput(spec.max_output_bytes)
    try:
        async with process, anyio.create_task_group() as readers:
            readers.start_soon(stdout.drain, process.stdout)
            readers.start_soon(stderr.drain, process.stderr)
            with anyio.move_on_after(spec.timeout) as deadline:
                await process.wait()
            timed_out = deadline.cancelled_caught
            _kill_process_group(process.pid)
            exit_code = await process.wait()
            readers.cancel_scope.deadline = anyio.current_time() + _DRAIN_GRACE_SECONDS
    finally:
        # On cancellation anyio kills only the leader; the rest of its group goes here.
        _kill_process_group(process.pid)
    return CommandResult(
        command=spec.command,
        program=spec.argv[0],
        args=spec.argv[1:],
        cwd=spec.cwd_label,
        exit_code=None if timed_out else exit_code,
        stdout=stdout.text(),
        stderr=stderr.text(),
        duration=time.monotonic() - start,
        timeout=spec.timeout,
        started_at=started_at,
        timed_out=timed_out,
        stdout_truncated=stdout.truncated,
        stderr_truncated=stderr.truncated,
    )


def _kill_process_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        # Already gone (ESRCH), or only zombies are left, which macOS reports as EPERM.
        pass
