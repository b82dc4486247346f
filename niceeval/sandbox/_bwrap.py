"""`BwrapSandbox`: `LocalSandbox`'s workspace, with every command run inside bubblewrap (`bwrap`).

What a command sees: the system (`/usr`, `/bin`, `/lib*`, `/etc`, ...) read-only; the workspace, its private
HOME and TMPDIR read-write at the same paths as outside; a fresh `/tmp`, `/proc` and `/dev`; nothing else of
the host's files (no `/home`, `/root`, `/work`: the project and its secrets are not there). It runs in its own
user, PID, IPC, UTS and network namespaces: when the command ends or is killed, everything it started dies
with it, and the only addresses it can reach are the allowed loopback endpoints (the model endpoint of an
agent's CLI), forwarded into the namespace by `_netshim.py` over Unix sockets. Where the namespace's network can
be set up (bwrap run by root), the sandbox has one network namespace for its life (`_bwrap_net.py`), whose helper
routes every other address to its loopback and records each attempt to reach one (`connection_attempts`), and
every command joins it; elsewhere each command gets a network namespace of its own and those attempts fail
unrecorded (`network_watch_problem()` says why).

Scoring (`run_pytest`) runs outside, as niceeval's own code with niceeval's Python.
"""

from __future__ import annotations

import functools
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from niceeval._core.errors import NiceevalError
from niceeval.sandbox._bwrap_net import NetworkHolder
from niceeval.sandbox._launch import LaunchOptions
from niceeval.sandbox._network import WATCH_SOCKET, AttemptRecorder
from niceeval.sandbox._workspace import LocalSandbox

SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
"""Host folders a sandboxed command reads (read-only), when they exist."""
_SHIM = Path(__file__).with_name("_netshim.py")
_PRLIMIT = shutil.which("prlimit", path="/usr/bin:/bin")
_NSENTER = shutil.which("nsenter", path="/usr/bin:/bin")
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


class SandboxUnavailableError(NiceevalError):
    """The sandbox asked for cannot run on this machine (bwrap missing or unable to create namespaces)."""


@dataclass(frozen=True, kw_only=True)
class ProcessLimits:
    """Limits on every command in the sandbox (`setrlimit`, inherited by what it starts).

    `processes` is RLIMIT_NPROC: the kernel counts it per user across the machine and does not apply it to root.
    """

    processes: int = 512
    file_size: int = 1 << 30
    """Largest file a command may write, in bytes."""


@functools.cache
def bwrap_problem() -> str | None:
    """Why bwrap cannot sandbox commands here (not installed, or namespaces refused), or None when it can."""
    if shutil.which("bwrap") is None:
        return "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    probe = ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bwrap could not start: {error}"
    if done.returncode != 0:
        return f"bwrap cannot create namespaces here: {done.stderr.strip() or f'exit status {done.returncode}'}"
    return None


@functools.cache
def network_watch_problem() -> str | None:
    """Why a bwrap sandbox cannot record the connection attempts of its commands here, or None when it can.

    The watcher needs CAP_NET_ADMIN and CAP_NET_RAW in the sandbox's network namespace, and commands join that
    namespace with util-linux's `nsenter`: both need root (run by another user, bwrap nests the sandbox's user
    namespace below the one owning the network's).
    """
    if _NSENTER is None:
        return "util-linux's nsenter is not installed (Debian/Ubuntu: apt-get install util-linux)"
    probe = ["bwrap", "--unshare-net", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"]
    probe += [sys.executable, "-I", "-S", str(_SHIM), "--watch", "/nonexistent", "--", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"the network watcher could not start: {error}"
    if done.returncode != 0:
        reason = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit status {done.returncode}"
        return f"the network watcher cannot set up the sandbox's network here ({reason})"
    return None


class EndpointForwarder:
    """Outside the sandbox: a Unix socket per allowed endpoint, each connection relayed to the real endpoint."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._sockets: dict[str, Path] = {}
        self._listeners: list[socket.socket] = []
        self._lock = threading.Lock()

    def socket_for(self, endpoint: str) -> Path:
        with self._lock:
            if endpoint not in self._sockets:
                self._folder.mkdir(exist_ok=True)
                path = self._folder / f"{len(self._sockets)}.sock"
                listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                listener.bind(str(path))
                listener.listen(64)
                threading.Thread(target=self._serve, args=(listener, endpoint), daemon=True).start()
                self._listeners.append(listener)
                self._sockets[endpoint] = path
            return self._sockets[endpoint]

    def close(self) -> None:
        """Stop accepting connections (those open end with the processes using them)."""
        with self._lock:
            for listener in self._listeners:
                listener.close()
            self._listeners.clear()

    @staticmethod
    def _serve(listener: socket.socket, endpoint: str) -> None:
        host, _, port = endpoint.rpartition(":")
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(target=_relay, args=(source, target), daemon=True).start()


def _relay(source: socket.socket, target: socket.socket) -> None:
    """Copy one direction; when it ends, end both, and close `source` (the other direction closes `target`)."""
    try:
        while chunk := source.recv(65536):
            target.sendall(chunk)
    except OSError:
        pass
    finally:
        for end in (source, target):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        source.close()


class BwrapSandbox(LocalSandbox):
    """A `LocalSandbox` whose commands and launched processes run inside bubblewrap; see the module docstring.

    Create it with `await BwrapSandbox.create(fixture, ...)` (the arguments of `LocalSandbox.create`), then
    optionally `sandbox.allow_network("127.0.0.1:8000")` for endpoints every command may reach.

    Raises:
        SandboxUnavailableError: From `create`, when bwrap is missing or cannot create namespaces here.
    """

    kind: ClassVar[str] = "bwrap"

    _allowed: tuple[str, ...] = ()
    _limits: ProcessLimits = ProcessLimits()
    _forwarder: EndpointForwarder | None = None
    _holder: NetworkHolder | None = None

    @classmethod
    async def create(cls, fixture: Path, **options: Any) -> BwrapSandbox:
        """Copy `fixture` into a new workspace (as `LocalSandbox.create`), checking bwrap works first."""
        problem = bwrap_problem()
        if problem is not None:
            raise SandboxUnavailableError(
                f"sandbox 'bwrap' is not available: {problem}. Install bubblewrap, or run with sandbox='local' "
                "(which does not isolate)."
            )
        sandbox = await super().create(fixture, **options)
        assert isinstance(sandbox, BwrapSandbox)
        net = sandbox.path.parent / "net"
        sandbox._forwarder = EndpointForwarder(net)
        if network_watch_problem() is None:
            recorder = AttemptRecorder(net / WATCH_SOCKET)
            sandbox._recorder = recorder
            try:
                sandbox._holder = await NetworkHolder.start(net, recorder.path, _SHIM)
            except BaseException:
                await LocalSandbox.close(sandbox)
                raise
            recorder.control = sandbox._holder.control
        return sandbox

    async def close(self, *, keep: bool = False) -> Path | None:
        """Stop forwarding the allowed endpoints and end the network namespace, then close as `LocalSandbox.close`."""
        await self._stop_recording()  # first: the helper reports what it has seen
        if self._forwarder is not None:
            self._forwarder.close()
        if self._holder is not None:
            await self._holder.stop()
        return await super().close(keep=keep)

    def allow_network(self, *endpoints: str) -> None:
        """Let every command reach these `host:port` loopback endpoints (all others stay unreachable)."""
        self._allowed = (*self._allowed, *(loopback_endpoint(e) for e in endpoints))

    def set_limits(self, limits: ProcessLimits) -> None:
        """The limits for the commands run from now on."""
        self._limits = limits

    async def _wrap(
        self, argv: tuple[str, ...], env: Mapping[str, str], cwd: Path, options: LaunchOptions
    ) -> tuple[str, ...]:
        assert self._forwarder is not None
        endpoints = dict.fromkeys((*self._allowed, *(loopback_endpoint(e) for e in options.allow_network)))
        if self._holder is not None:
            return await self._wrap_joined(argv, cwd, options, tuple(endpoints))
        args = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", *self._binds(options)]
        args += ["--chdir", str(cwd)]
        forwards: list[str] = []
        for endpoint in endpoints:
            path = self._forwarder.socket_for(endpoint)
            args += ["--ro-bind", str(path), str(path)]
            forwards += ["--forward", f"{endpoint}={path}"]
        return (*args, *self._start(forwards), "--", *argv)

    async def _wrap_joined(
        self, argv: tuple[str, ...], cwd: Path, options: LaunchOptions, endpoints: tuple[str, ...]
    ) -> tuple[str, ...]:
        """Run in the sandbox's one network namespace (its helper relays the endpoints), in namespaces of its own
        for the rest."""
        assert self._forwarder is not None and self._holder is not None and _NSENTER is not None
        for endpoint in endpoints:
            await self._holder.forward(endpoint, self._forwarder.socket_for(endpoint))
        args = [_NSENTER, f"--net={self._holder.namespace}", "--", "bwrap", "--unshare-user-try", "--unshare-ipc"]
        args += ["--unshare-pid", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", "--new-session"]
        args += [*self._binds(options), "--chdir", str(cwd)]
        return (*args, *self._start([]), "--", *argv)

    def _binds(self, options: LaunchOptions) -> list[str]:
        root = self.path.parent
        args: list[str] = []
        for folder in SYSTEM_PATHS:
            args += ["--ro-bind-try", folder, folder]
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        for folder in _python_prefixes():
            args += ["--ro-bind-try", folder, folder]
        for path in options.read_only:
            args += ["--ro-bind", str(path), str(path)]
        for path in (self.path, root / "home", root / "tmp", *options.writable):
            args += ["--bind", str(path), str(path)]
        return args

    def _start(self, forwards: list[str]) -> list[str]:
        """The end of bwrap's arguments and the start of the command's: the limits, set by the shim when it has
        endpoints to forward, else by util-linux's prlimit (a fraction of Python's start-up)."""
        limits = ["--nproc", str(self._limits.processes), "--fsize", str(self._limits.file_size)]
        # The new root is a tmpfs holding the mount points: read-only, so a write outside the binds fails.
        if forwards or _PRLIMIT is None:
            shim = [sys.executable, "-I", "-S", str(_SHIM), *forwards, *limits]
            return ["--ro-bind", str(_SHIM), str(_SHIM), "--remount-ro", "/", "--", *shim]
        prlimit = [_PRLIMIT, f"--nproc={self._limits.processes}", f"--fsize={self._limits.file_size}", "--core=0"]
        return ["--remount-ro", "/", "--", *prlimit]


def loopback_endpoint(endpoint: str) -> str:
    host, _, port = endpoint.rpartition(":")
    if host not in _LOOPBACK or not port.isdigit():
        raise SandboxUnavailableError(
            f"the bwrap sandbox forwards loopback endpoints only (e.g. 127.0.0.1:8808), not {endpoint!r}: "
            "a remote model endpoint needs sandbox='local' or a local proxy in front of it."
        )
    return "127.0.0.1:" + port if host == "localhost" else f"{host}:{port}"


@functools.cache
def _python_prefixes() -> tuple[str, ...]:
    """Where niceeval's Python lives (the shim runs with it; commands often run `sys.executable`)."""
    prefixes = {sys.prefix, sys.base_prefix, str(Path(sys.executable).resolve().parent.parent)}
    return tuple(sorted(p for p in prefixes if not any(p.startswith(s + "/") or p == s for s in SYSTEM_PATHS)))
