"""`LocalSandbox`: a fixture copied into a temp directory, commands run as local processes.

It isolates only what it controls: each command's working directory (the workspace), its
environment (scrubbed: no API keys or other secrets from the parent unless passed explicitly), its
HOME and TMPDIR (private directories), and its running time (killed, with its process group, at
the timeout). It is NOT a container: commands run as the current user, can read and write any path
that user can (absolute paths and `..` in arguments are not checked), and have full network access.
For untrusted agents, implement the `Sandbox` protocol with a container-backed provider.

Layout of the temp directory: `workspace/` (the agent's tree), `home/`, `tmp/`, and one `scoring-*/`
directory per `run_pytest`, so hidden tests never appear in the workspace or its diff.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import shutil
import stat
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from types import TracebackType
from typing import TYPE_CHECKING, ClassVar, Unpack
from xml.sax.saxutils import escape as xml_escape

import anyio

from niceeval._core.errors import NiceevalError
from niceeval._core.results import SandboxRecord
from niceeval.sandbox._commands import (
    DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_TIMEOUT,
    CommandOptions,
    CommandResult,
    CommandSpec,
    command_options,
    run_process,
    scrubbed_env,
)
from niceeval.sandbox._diff import Diff, compute_diff
from niceeval.sandbox._history import AUTHORS, Author, Authorship, Snapshot, Stretch, stretches_diff
from niceeval.sandbox._launch import LaunchOptions, ProcessLaunch
from niceeval.sandbox._network import AttemptRecorder, ConnectionAttempt
from niceeval.sandbox._protocol import PytestRun, Sandbox
from niceeval.sandbox._tree import FileState, SkippedPath, StatCache, copy_fixture, fingerprint_tree

DEFAULT_HIDDEN = ("EVAL.py",)
"""Fixture files the agent must not see: the hidden tests that score its work."""

DEFAULT_IGNORE = ("__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".git", ".venv", "node_modules")
"""Paths copied but not tracked: caches, VCS data and installed dependencies would drown the diff."""


class SandboxPathError(NiceevalError, ValueError):
    """A path given to a sandbox leads outside its workspace, or is not what the call needs."""


@dataclass(frozen=True, kw_only=True)
class _Settings:
    ignore: tuple[str, ...]
    env: Mapping[str, str]
    max_output_bytes: int
    on_command: Callable[[CommandResult], None] | None
    on_attempt: Callable[[ConnectionAttempt], None] | None = None


@dataclass(frozen=True, kw_only=True)
class Prepared:
    """A workspace already in place in a sandbox folder (a reused container's, restored from its checkpoint)."""

    baseline: Mapping[str, FileState]
    """Its fingerprint: the workspace holds exactly the files it was taken of."""
    skipped: tuple[SkippedPath, ...]
    """What the copy of the fixture left out."""


class LocalSandbox:
    """A fixture folder copied into a fresh temp workspace, with a baseline to diff against.

    Create it with `await LocalSandbox.create(fixture)`; close it with `await sandbox.close()` or use
    it as `async with sandbox:`. It implements the `Sandbox` protocol.
    """

    kind: ClassVar[str] = "local"
    """The sandbox kind, as `sandbox=` names it."""

    def __init__(
        self,
        *,
        root: Path,
        fixture: Path,
        skipped: Sequence[SkippedPath],
        baseline: Mapping[str, FileState],
        settings: _Settings,
        stat_cache: StatCache | None = None,
    ) -> None:
        self._root = root
        self._workspace = root / "workspace"
        self._fixture = fixture
        self._skipped = tuple(skipped)
        self._baseline = baseline
        self._authorship = Authorship(baseline)
        self._stat_cache = stat_cache or StatCache()
        """The last walk's file states: a snapshot reads again only the files whose `lstat` changed."""
        self._settings = settings
        self._commands: list[CommandResult] = []
        self._attempts: list[ConnectionAttempt] = []
        self._recorder: AttemptRecorder | None = None
        """Where an isolating subclass's network watcher reports; None: the network is not watched."""
        self._closed = False
        self._kept: Path | None = None

    @classmethod
    async def create(
        cls,
        fixture: Path,
        *,
        hidden: Sequence[str] = DEFAULT_HIDDEN,
        ignore: Sequence[str] = DEFAULT_IGNORE,
        env: Mapping[str, str] | None = None,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        on_command: Callable[[CommandResult], None] | None = None,
        on_attempt: Callable[[ConnectionAttempt], None] | None = None,
        temp_dir: Path | None = None,
        root: Path | None = None,
        prepared: Prepared | None = None,
    ) -> LocalSandbox:
        """Copy `fixture` into a new temp workspace and record the baseline.

        Symlinks are copied as links only if they are relative and stay inside the fixture; others,
        hidden files and special files are left out and listed in `skipped`.

        Args:
            fixture: The folder to copy.
            hidden: Patterns of fixture paths not copied. A pattern without `/` matches a file or
                directory name at any depth; one with `/` matches the whole relative path.
            ignore: Patterns (same form) of paths that are copied but not tracked by `diff()`.
            env: Variables given to every command, on top of the scrubbed environment.
            max_output_bytes: How much of each command's stdout and of its stderr is kept.
            on_command: Called with each recorded command's result when it finishes.
            on_attempt: Called with each connection attempt the sandbox refused, when it learns of it (after the
                command that made it, or `collect_connection_attempts()`); an isolating subclass records them.
            temp_dir: Where to create the sandbox; the system temp directory by default.
            root: An existing sandbox folder to use instead of a new one, its `workspace`, `home` and `tmp` empty
                (a container reused across attempts keeps mounting the same folders).
            prepared: With `root`: its workspace is already the fixture as copied (restored from a checkpoint); it
                is neither copied nor fingerprinted again.

        Raises:
            NotADirectoryError: `fixture` is not a directory.
        """
        fixture = Path(fixture)
        if not fixture.is_dir():
            raise NotADirectoryError(f"sandbox fixture {fixture} is not a directory")
        settings = _Settings(
            ignore=tuple(ignore),
            env=dict(env or {}),
            max_output_bytes=max_output_bytes,
            on_command=on_command,
            on_attempt=on_attempt,
        )
        if prepared is not None and root is not None:
            skipped, baseline = prepared.skipped, prepared.baseline
            return cls(root=root, fixture=fixture, skipped=skipped, baseline=baseline, settings=settings)
        prepare = functools.partial(cls._prepare, fixture, tuple(hidden), settings, temp_dir, root)
        return await anyio.to_thread.run_sync(prepare)

    @classmethod
    def _prepare(
        cls, fixture: Path, hidden: tuple[str, ...], settings: _Settings, temp_dir: Path | None, root: Path | None
    ) -> LocalSandbox:
        fresh = root is None
        if root is None:
            root = Path(tempfile.mkdtemp(prefix="niceeval-sandbox-", dir=temp_dir)).resolve()
        try:
            for name in ("workspace", "home", "tmp"):
                (root / name).mkdir(exist_ok=not fresh)
            skipped = copy_fixture(fixture, root / "workspace", hidden=hidden)
            cache = StatCache()
            baseline = fingerprint_tree(root / "workspace", ignore=settings.ignore, keep_text=True, cache=cache)
        except BaseException:
            if fresh:
                _remove_tree(root)
            raise
        return cls(root=root, fixture=fixture, skipped=skipped, baseline=baseline, settings=settings, stat_cache=cache)

    @property
    def path(self) -> Path:
        """The workspace root (the agent's working directory)."""
        return self._workspace

    @property
    def fixture(self) -> Path:
        """The fixture folder this sandbox was copied from."""
        return self._fixture

    @property
    def skipped(self) -> tuple[SkippedPath, ...]:
        """Fixture entries not copied into the workspace (hidden files, unsafe symlinks, fifos...)."""
        return self._skipped

    @property
    def commands(self) -> tuple[CommandResult, ...]:
        """Every recorded command run so far, in the order they finished."""
        return tuple(self._commands)

    @property
    def connection_attempts(self) -> tuple[ConnectionAttempt, ...]:
        """Every attempt to reach an address outside the sandbox recorded so far, in order (a bwrap or Docker sandbox
        watches its network; a local one does not, and this stays empty). Reading it records what the watcher has
        reported since (a launched agent CLI's attempts, which no command's end collects)."""
        self._record(self._recorder.take() if self._recorder is not None else [])
        return tuple(self._attempts)

    async def collect_connection_attempts(self) -> tuple[ConnectionAttempt, ...]:
        """Wait until the network watcher has reported every attempt made so far, record them, and return the new
        ones. Each command does this when it ends; the runner does it when the eval's body ends."""
        if self._recorder is None:
            return ()
        await self._recorder.settle()
        found = self._recorder.take()
        self._record(found)
        return tuple(found)

    async def _stop_recording(self) -> None:
        """Collect the last attempts and stop listening for more (shielded: a cancelled eval keeps its record)."""
        if self._recorder is None:
            return
        with anyio.CancelScope(shield=True):
            await self.collect_connection_attempts()
        self._recorder.close()
        self._recorder = None

    def _record(self, found: Sequence[ConnectionAttempt]) -> None:
        self._attempts += found
        if self._settings.on_attempt is not None:
            for attempt in found:
                self._settings.on_attempt(attempt)

    @property
    def closed(self) -> bool:
        """True once `close()` was called."""
        return self._closed

    async def read_text(self, rel: str | PurePath) -> str:
        """The UTF-8 text of a workspace file."""
        path = self._inside(rel)
        return await anyio.to_thread.run_sync(functools.partial(path.read_text, encoding="utf-8"))

    async def read_bytes(self, rel: str | PurePath) -> bytes:
        """The bytes of a workspace file."""
        return await anyio.to_thread.run_sync(self._inside(rel).read_bytes)

    async def write_bytes(self, rel: str | PurePath, data: bytes) -> None:
        """Write a workspace file's bytes, creating missing parent directories."""
        path = self._inside(rel)

        def write() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)

        await anyio.to_thread.run_sync(write)

    async def write_text(self, rel: str | PurePath, text: str) -> None:
        """Write a workspace file as UTF-8, creating missing parent directories."""
        path = self._inside(rel)

        def write() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")

        await anyio.to_thread.run_sync(write)

    async def exists(self, rel: str | PurePath) -> bool:
        """True if the path exists in the workspace (a dangling symlink does not)."""
        return await anyio.to_thread.run_sync(self._inside(rel).exists)

    async def run_command(self, cmd: str, args: Sequence[str] = (), **options: Unpack[CommandOptions]) -> CommandResult:
        """Run a program (looked up on PATH, no shell) in the workspace.

        A failing, missing (exit status 127) or timed-out program is a result, not an exception.

        Args:
            cmd: The program, e.g. `"npm"`.
            args: Its arguments, e.g. `["run", "build"]`.
            **options: `cwd`, `timeout` (60 s), `env`, `record`: each documented on `CommandOptions`.

        Raises:
            SandboxPathError: `cwd` leads outside the workspace or is not a directory.
            TypeError: `args` is a single string, or an option is misspelt.
        """
        if isinstance(args, str):
            raise TypeError(f"args must be a list of strings, not a str: write run_command({cmd!r}, [{args!r}])")
        argv = (cmd, *args)
        return await self._run(argv, shlex.join(argv), command_options(options, "run_command"))

    async def run_shell(self, script: str, **options: Unpack[CommandOptions]) -> CommandResult:
        """Run `script` with `sh -c` in the workspace; options as for `run_command`."""
        return await self._run(("sh", "-c", script), script, command_options(options, "run_shell"))

    async def diff(self, *, author: Author | None = None) -> Diff:
        """What changed in the workspace since the baseline; with `author`, only that author's changes.

        Args:
            author: `"eval"`: what the eval's own writes (inside `eval_writes()`, as every `t.sandbox` call that
                writes or runs a command) changed; `"agent"`: what changed outside them. Per path, the file as
                that author first found it and as it last left it.

        Raises:
            ValueError: `author` is neither.
        """
        self._check_open()
        if author is None:
            compute = functools.partial(compute_diff, self._baseline, self._workspace, ignore=self._settings.ignore)
            return await anyio.to_thread.run_sync(compute)
        if author not in AUTHORS:
            raise ValueError(f"diff(author=...) is one of {AUTHORS} (or None for every change), got {author!r}")
        stretches = self._authorship.stretches(author, await self.snapshot())
        return await anyio.to_thread.run_sync(stretches_diff, stretches)

    def record(self, *, open_s: float) -> SandboxRecord:
        """What a run's result says about its sandbox (`RunResult.sandbox`)."""
        return SandboxRecord(kind=self.kind, open_s=round(open_s, 3))

    async def snapshot(self) -> Snapshot:
        """The workspace now, fingerprinted with its text (to diff a stretch of the run against later)."""
        self._check_open()
        states = functools.partial(
            fingerprint_tree, self._workspace, ignore=self._settings.ignore, keep_text=True, cache=self._stat_cache
        )
        return await anyio.to_thread.run_sync(states)

    @contextlib.asynccontextmanager
    async def eval_writes(self) -> AsyncIterator[None]:
        """Mark what happens inside as the eval's own writes, not the agent's (`diff(author=...)`)."""
        before = await self.snapshot()
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                after = await self.snapshot()
            self._authorship.eval_wrote(Stretch(before=before, after=after))

    async def launch(self, argv: Sequence[str], options: LaunchOptions) -> ProcessLaunch:
        """How to start a long-running process in the workspace: its argv, scrubbed environment and cwd.

        `LocalSandbox` runs it as it is (network, read-only and writable paths are not enforced).
        """
        self._check_open()
        env = self._env(options.env)
        wrapped = await self._wrap(tuple(argv), env, self._workspace, options)
        return ProcessLaunch(argv=wrapped, env=env, cwd=self._workspace)

    async def run_pytest(self, test_file: Path, *, timeout: float, pytest_args: Sequence[str] = ()) -> PytestRun:
        """Run `test_file` with `sys.executable -m pytest`, cwd the workspace, from a scoring directory.

        The test file, its `pytest.ini` and the JUnit report live in a `scoring-*` directory next to
        the workspace, so the workspace's `conftest.py` and pytest configuration do not apply.
        Third-party pytest plugins are not auto-loaded (they could change outcomes or write into the
        workspace); ask for one with `pytest_args=["-p", "anyio"]`. The workspace is importable
        (first on `sys.path`), so the tests can import the agent's code.
        """
        self._check_open()
        scoring = Path(tempfile.mkdtemp(prefix="scoring-", dir=self._root))
        shutil.copyfile(test_file, scoring / test_file.name)
        # Full assertion diffs in failure texts (they are trimmed later), without verbose console output.
        (scoring / "pytest.ini").write_text("[pytest]\nverbosity_assertions = 2\n", encoding="utf-8")
        junit = scoring / "junit.xml"
        argv = (
            sys.executable, "-m", "pytest", str(scoring / test_file.name),
            "-c", str(scoring / "pytest.ini"), "-p", "no:cacheprovider",
            "-q", "--tb=short", "--color=no", f"--junitxml={junit}", *pytest_args,
        )  # fmt: skip
        command = await self._run(
            argv,
            shlex.join(("pytest", test_file.name, *pytest_args)),
            {"timeout": timeout, "env": {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}, "record": False},
            isolate=False,  # niceeval's own pytest, from its environment (see docs/sandbox.md)
        )
        junit_xml = junit.read_text(encoding="utf-8") if junit.is_file() else None
        if junit_xml is not None:
            # Failure texts locate lines as "../scoring-x/EVAL.py:7" or by absolute path: make it "EVAL.py:7".
            for prefix in (f"{scoring}{os.sep}", f"{os.path.relpath(scoring, self._workspace)}{os.sep}"):
                junit_xml = junit_xml.replace(xml_escape(prefix), "")
        return PytestRun(command=command, junit_xml=junit_xml)

    async def close(self, *, keep: bool = False) -> Path | None:
        """Remove the sandbox's temp directory, or keep it and return the workspace path.

        Safe to call more than once: later calls return what the first one did.
        """
        if self._closed:
            return self._kept
        self._closed = True
        await self._stop_recording()
        if keep:
            self._kept = self._workspace
            return self._kept
        # Shielded: a cancelled eval must still clean up after itself.
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(_remove_tree, self._root)
        return None

    async def __aenter__(self) -> LocalSandbox:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self._workspace)!r}, fixture={str(self._fixture)!r})"

    async def _run(
        self, argv: tuple[str, ...], command: str, options: CommandOptions, *, isolate: bool = True
    ) -> CommandResult:
        cwd = options.get("cwd")
        workdir = self._inside("." if cwd is None else cwd)
        if not workdir.is_dir():
            raise SandboxPathError(f"cwd {str(cwd)!r} is not a directory in the workspace {self._workspace}")
        full_env = self._env(options.get("env") or {})
        wrapped = await self._wrap(argv, full_env, workdir, LaunchOptions()) if isolate else argv
        spec = CommandSpec(
            argv=argv,
            wrapped=wrapped if wrapped != argv else None,
            command=command,
            cwd=workdir,
            cwd_label=workdir.relative_to(self._workspace).as_posix(),
            env=full_env,
            timeout=options.get("timeout", DEFAULT_TIMEOUT),
            max_output_bytes=self._settings.max_output_bytes,
        )
        result = await run_process(spec)
        await self.collect_connection_attempts()
        if options.get("record", True):
            self._commands.append(result)
            if self._settings.on_command is not None:
                self._settings.on_command(result)
        return result

    def _env(self, extra: Mapping[str, str]) -> dict[str, str]:
        return scrubbed_env(self._root / "home", self._root / "tmp", {**self._settings.env, **extra})

    async def _wrap(
        self, argv: tuple[str, ...], env: Mapping[str, str], cwd: Path, options: LaunchOptions
    ) -> tuple[str, ...]:
        """The argv that runs `argv` in this sandbox: unchanged here; an isolating subclass wraps it."""
        return argv

    def _inside(self, rel: str | PurePath) -> Path:
        """Resolve `rel` against the workspace, following symlinks, and refuse anything outside it."""
        self._check_open()
        resolved = (self._workspace / rel).resolve()
        if not resolved.is_relative_to(self._workspace):
            raise SandboxPathError(f"{str(rel)!r} is outside the sandbox workspace {self._workspace}")
        return resolved

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{self!r} is closed")


def _remove_tree(root: Path) -> None:
    try:
        shutil.rmtree(root)
    except PermissionError:
        # The agent may have left read-only directories behind; deleting needs them writable.
        _make_owner_writable(root)
        shutil.rmtree(root)


def _make_owner_writable(directory: Path) -> None:
    directory.chmod(stat.S_IRWXU)
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                _make_owner_writable(Path(entry.path))


if TYPE_CHECKING:
    # Lets mypy hold LocalSandbox to the protocol it implements.
    _implements_protocol: type[Sandbox] = LocalSandbox
