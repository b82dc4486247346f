"""What `claude_code_agent` and `codex_agent` share: options, finding the CLI, running it in the sandbox, sessions.

Each turn runs the CLI once, headless, in the eval's sandbox workspace (through `Sandbox.launch`, so an isolating
sandbox wraps it), and reads its JSON event stream line by line; a translator (one per CLI) turns each line into
niceeval events as it arrives. The CLI keeps its own conversation on disk (in a state folder next to the
workspace, never inside it), and the next turn (or `t.revive()`) continues it by the CLI's session id.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from niceeval._core.errors import NiceevalError, UsageError
from niceeval._core.events import ErrorEvent, EventLog, MessageEvent
from niceeval._core.values import STREAM_MARGIN, tail_of_stream
from niceeval.agents._function import structure
from niceeval.agents._protocol import AgentReply, current_workspace
from niceeval.sandbox import LaunchOptions, ProcessLaunch, current_sandbox

_MAX_LINE_BYTES = 16 * 1024 * 1024
_STDERR_KEPT = 4000
_EXIT_GRACE_S = 1.0


class CodingAgentError(NiceevalError):
    """The coding agent's CLI cannot run: it is not installed, or the eval gives it no workspace."""


@dataclass(frozen=True, kw_only=True)
class CodingAgentOptions:
    """Per-eval setup of a coding agent's CLI; every field may differ between variants (`per_variant`).

    Args:
        model: The model the CLI asks for (`--model`); the CLI's default when None.
        instructions: Project instructions given to the agent as its user-level CLAUDE.md / AGENTS.md (text, or
            a `Path` to a file); kept out of the workspace, so they never show in the diff.
        skills: A folder of skills (one subfolder per skill, each with a `SKILL.md`), installed where the CLI
            looks for the user's skills.
        mcp_servers: MCP servers by name, each `{"command": ..., "args": [...], "env": {...}}` (stdio) or
            `{"url": ...}` (HTTP), written into the CLI's own configuration format.
        allowed_tools: Tools the agent may use without asking (Claude Code's `--allowedTools`); None: its
            file, shell and search tools. Codex takes no such list (its tools run under niceeval's sandbox).
        max_turns: Most model turns (tool-using steps) per message; past it the CLI is killed, the turn fails
            with an `error` event, and the events so far are kept.
        timeout: Seconds one message may take; past it the CLI and every process it started are killed.
        base_url: The model endpoint; `ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL` (read when the session opens)
            when None.
        api_key: The key sent to it; `ANTHROPIC_API_KEY` / `OPENAI_API_KEY` when None.
        executable: The CLI to run (a path or a name on PATH); `claude` / `codex` when None.
        env: More variables for the CLI (the sandbox starts it with a scrubbed environment).
        extra_args: More command-line arguments, appended as given.
    """

    model: str | None = None
    instructions: str | Path | None = None
    skills: str | Path | None = None
    mcp_servers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    allowed_tools: Sequence[str] | None = None
    max_turns: int | None = None
    timeout: float = 600.0
    base_url: str | None = None
    api_key: str | None = None
    executable: str | Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    extra_args: Sequence[str] = ()

    def __post_init__(self) -> None:
        if self.max_turns is not None and (isinstance(self.max_turns, bool) or self.max_turns < 1):
            raise UsageError(f"CodingAgentOptions(max_turns=...) is a number of turns >= 1, got {self.max_turns!r}.")
        if not self.timeout > 0:
            raise UsageError(f"CodingAgentOptions(timeout=...) is seconds, more than 0; got {self.timeout!r}.")
        if isinstance(self.allowed_tools, str):
            raise UsageError("CodingAgentOptions(allowed_tools=...) is a list of tool names, e.g. ['Bash', 'Write'].")
        if isinstance(self.extra_args, str):
            raise UsageError("CodingAgentOptions(extra_args=...) is a list of arguments, not one string.")
        if self.skills is not None and not Path(self.skills).is_dir():
            raise UsageError(f"CodingAgentOptions(skills=...): {str(self.skills)!r} is not a folder of skills.")
        if isinstance(self.instructions, Path) and not self.instructions.is_file():
            raise UsageError(f"CodingAgentOptions(instructions=...): {str(self.instructions)!r} is not a file.")
        for name, server in self.mcp_servers.items():
            if not isinstance(server, Mapping) or not ({"command", "url"} & set(server)):
                raise UsageError(
                    f"CodingAgentOptions(mcp_servers=...): server {name!r} needs a 'command' (stdio) or a 'url'."
                )

    def instructions_text(self) -> str | None:
        """The instructions as text (read from the file when a `Path` was given)."""
        if isinstance(self.instructions, Path):
            return self.instructions.read_text(encoding="utf-8")
        return self.instructions


@dataclass(frozen=True, kw_only=True)
class CLI:
    """One coding agent's command line: how it is named, installed, and found."""

    title: str
    command: str
    package: str
    version: str

    def find(self, executable: str | Path | None) -> Path:
        """The CLI's path, or an error that says how to install the pinned version."""
        wanted = str(executable) if executable is not None else self.command
        found = shutil.which(wanted)
        if found is None:
            where = f"{wanted!r} is not an executable file" if os.sep in wanted else f"{wanted!r} is not on PATH"
            raise CodingAgentError(
                f"{self.title}'s command line is not installed ({where}). Install the version niceeval is tested "
                f"with: npm install -g {self.package}@{self.version} (or point CodingAgentOptions(executable=...) "
                "at it). niceeval never downloads it itself."
            )
        return Path(found)

    def install_dir(self, binary: Path) -> Path:
        """What a sandbox must show the process: the npm package holding the binary (node_modules), or its folder."""
        real = binary.resolve()
        for parent in real.parents:
            if parent.name == "node_modules":
                return parent
        return real.parent


@dataclass(kw_only=True)
class TurnOutcome:
    """How one CLI invocation ended, as its translator saw it."""

    text: str = ""
    failed: bool = False
    session_id: str | None = None
    turns: int = 0
    """Model turns counted so far (the turn limit applies to it)."""
    done: bool = False
    """The stream said the turn is over (its final line): the CLI gets a moment to exit, then is stopped."""


class Translator(Protocol):
    """Turns one CLI's JSON lines into niceeval events, and says how the turn went."""

    outcome: TurnOutcome

    def line(self, data: dict[str, Any]) -> None:
        """Handle one decoded JSON line of the CLI's stream."""
        ...

    def finish(self, error: str | None) -> None:
        """The process ended (`error` says why it failed, if it did): close what is still open."""
        ...


@dataclass(frozen=True, kw_only=True)
class Invocation:
    """One run of the CLI for one message."""

    argv: tuple[str, ...]
    launch: LaunchOptions
    timeout: float
    max_turns: int | None


async def run_cli(invocation: Invocation, translator: Translator, log: EventLog) -> None:
    """Run the CLI in the current sandbox, feeding its stdout lines to `translator` until it ends or is stopped.

    At the timeout or past the turn limit the CLI's whole process group is killed; the events already
    translated stay, and the turn is failed with an `error` event saying why.
    """
    launch = await _launch(invocation)
    stderr = bytearray()
    stopped: str | None = None
    process = await anyio.open_process(
        list(launch.argv), stdin=subprocess.DEVNULL, cwd=launch.cwd, env=dict(launch.env), start_new_session=True
    )
    try:
        async with process, anyio.create_task_group() as readers:
            readers.start_soon(_drain, process.stderr, stderr)
            with anyio.move_on_after(invocation.timeout) as deadline:
                stopped = await _read_lines(process, translator, invocation.max_turns)
                if translator.outcome.done:
                    # Its work is done and reported; some CLIs then wait seconds on telemetry they cannot send.
                    with anyio.move_on_after(_EXIT_GRACE_S):
                        await process.wait()
            if deadline.cancelled_caught:
                stopped = f"timed out after {invocation.timeout:g} s"
            _kill_group(process.pid)
            code = 0 if translator.outcome.done and stopped is None else await process.wait()
            await process.wait()
            readers.cancel_scope.deadline = anyio.current_time() + 1.0
    finally:
        _kill_group(process.pid)
    error = stopped or _exit_error(code, stderr)
    if stopped is not None:
        log.emit(ErrorEvent(message=f"the agent's CLI was stopped: {stopped}", error_type="CodingAgentStopped"))
    elif error is not None and not translator.outcome.failed:
        log.emit(ErrorEvent(message=error, error_type="CodingAgentError"))
    translator.finish(error)
    if error is not None:
        translator.outcome.failed = True


async def _launch(invocation: Invocation) -> ProcessLaunch:
    sandbox = current_sandbox()
    if sandbox is not None:
        return await sandbox.launch(invocation.argv, invocation.launch)
    workspace = current_workspace()
    if workspace is None:
        raise CodingAgentError(
            "a coding agent works in a sandbox workspace: give the eval a fixture, @define_eval(fixture='...')."
        )
    env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": os.environ.get("LANG", "C.UTF-8")}
    return ProcessLaunch(argv=invocation.argv, env={**env, **invocation.launch.env}, cwd=workspace)


async def _read_lines(process: anyio.abc.Process, translator: Translator, max_turns: int | None) -> str | None:
    """Feed stdout to the translator; a reason to stop the CLI (the turn limit), or None when it ended."""
    assert process.stdout is not None
    lines = BufferedByteReceiveStream(process.stdout)
    while True:
        try:
            raw = await lines.receive_until(b"\n", _MAX_LINE_BYTES)
        except (anyio.EndOfStream, anyio.IncompleteRead):
            return None
        data = _decode(raw)
        if data is not None:
            translator.line(data)
        if max_turns is not None and translator.outcome.turns > max_turns:
            return f"it went past its turn limit of {max_turns} (max_turns)"
        if translator.outcome.done:
            return None


def _decode(raw: bytes) -> dict[str, Any] | None:
    import json

    try:
        data = json.loads(raw)
    except ValueError:
        return None  # a CLI's stray log line on stdout is not an event
    return data if isinstance(data, dict) else None


async def _drain(stream: anyio.abc.ByteReceiveStream | None, into: bytearray) -> None:
    if stream is None:
        return
    async for chunk in stream:
        into.extend(chunk)
        del into[: max(0, len(into) - _STDERR_KEPT - STREAM_MARGIN)]


def _exit_error(code: int, stderr: bytes | bytearray) -> str | None:
    if code == 0:
        return None
    full = len(stderr) == _STDERR_KEPT + STREAM_MARGIN  # its start may be cut
    said = tail_of_stream(stderr.decode("utf-8", errors="replace"), _STDERR_KEPT, cut=full).strip()
    how = f"killed by signal {-code}" if code < 0 else f"exited with status {code}"
    return f"the agent's CLI {how}" + (f": {said}" if said else "")


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass
class SessionState:
    """What a niceeval session keeps across turns and `t.revive()`: the CLI's state folder and session id."""

    home: Path
    cli_session: str | None = None
    model_totals: dict[str, dict[str, float]] = field(default_factory=dict)
    """The CLI's running totals per model so far (Claude Code reports the session's, not the run's)."""


class CodingSession:
    """One conversation with a coding agent's CLI; each `send` runs the CLI once."""

    def __init__(self, agent: CodingAgentBase, session_id: str, log: EventLog, state: SessionState) -> None:
        self.id = session_id
        self._agent = agent
        self._log = log
        self._state = state

    async def send(self, message: str, *, output: type[Any] | None = None) -> AgentReply:
        self._log.emit(MessageEvent(role="user", text=message))
        translator = self._agent.translator(self._log, self._state)
        await run_cli(self._agent.invocation(message, self._state), translator, self._log)
        outcome = translator.outcome
        if outcome.session_id:
            self._state.cli_session = outcome.session_id
        reply = AgentReply(text=outcome.text, status="failed" if outcome.failed else "completed")
        reply = structure(reply, output, self._log)
        self._log.emit(MessageEvent(role="assistant", text=reply.text, data=reply.data))
        return reply

    async def close(self) -> None:
        """Nothing to free: the CLI's state stays beside the workspace so the session can be revived."""


class CodingAgentBase:
    """An agent adapter that runs a coding agent's CLI; subclasses say how to call it and read its stream."""

    cli: CLI

    def __init__(self, options: CodingAgentOptions) -> None:
        self.options = options
        self._sessions: dict[str, SessionState] = {}

    async def open(self, session_id: str, log: EventLog) -> CodingSession:
        state = self._sessions.get(session_id)
        if state is None or not state.home.is_dir():
            state = SessionState(home=_state_folder(self.cli.command, session_id))
            await anyio.to_thread.run_sync(self.prepare_home, state.home)
            self._sessions[session_id] = state
        return CodingSession(self, session_id, log, state)

    def prepare_home(self, home: Path) -> None:
        """Write the CLI's configuration, instructions and skills into its fresh state folder."""
        raise NotImplementedError

    def install_guidance(self, folder: Path, instructions_file: str) -> None:
        """Put the options' instructions (as `folder/instructions_file`) and skills (as `folder/skills`) where the
        CLI reads the user's own."""
        folder.mkdir(parents=True, exist_ok=True)
        instructions = self.options.instructions_text()
        if instructions is not None:
            (folder / instructions_file).write_text(instructions, encoding="utf-8")
        if self.options.skills is not None:
            shutil.copytree(self.options.skills, folder / "skills", dirs_exist_ok=True)

    def invocation(self, message: str, state: SessionState) -> Invocation:
        """The command line for one message."""
        raise NotImplementedError

    def translator(self, log: EventLog, state: SessionState) -> Translator:
        """A fresh translator for one turn's stream."""
        raise NotImplementedError

    def launch_options(self, home: Path, env: Mapping[str, str], binary: Path, endpoint: str) -> LaunchOptions:
        """The sandbox needs to show the CLI its installation and state, and let it reach its model endpoint."""
        return LaunchOptions(
            env={**env, **self.options.env},
            allow_network=(endpoint,),
            read_only=(self.cli.install_dir(binary),),
            writable=(home,),
        )


def _state_folder(command: str, session_id: str) -> Path:
    """A fresh folder for the CLI's own state, beside the workspace (removed with the sandbox)."""
    workspace = current_workspace()
    if workspace is None:
        raise CodingAgentError(
            "a coding agent works in a sandbox workspace: give the eval a fixture, @define_eval(fixture='...')."
        )
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", session_id)[-80:]
    folder = workspace.parent / "agent-state" / f"{command}-{safe}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def endpoint_of(url: str) -> str:
    """`host:port` of a base URL, as a sandbox's network allow-list takes it."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.hostname is None:
        raise UsageError(f"the coding agent's base_url {url!r} is not a URL (write e.g. http://127.0.0.1:8808).")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{host}:{port}"


def elapsed(started: float | None) -> float | None:
    """Seconds since a `time.monotonic()` reading, or None when the start was not seen."""
    return None if started is None else round(time.monotonic() - started, 3)


def merged_options(options: CodingAgentOptions | None, fields: dict[str, Any]) -> CodingAgentOptions:
    """`options` with `fields` replaced (the keyword form of the factories)."""
    base = options or CodingAgentOptions()
    try:
        return replace(base, **fields) if fields else base
    except TypeError as exc:
        raise UsageError(f"{exc}; the fields are those of CodingAgentOptions.") from None
