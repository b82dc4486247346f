"""`DockerSandbox`: `LocalSandbox`'s workspace, with every command `docker exec`ed in one container per eval run.

What a command sees: the image's system, read-only, with a fresh `/tmp`; the workspace, its HOME and TMPDIR
bind-mounted read-write at the same paths as outside (so paths in events mean the same inside and out, and the
diff, reading and scoring work on the host's copy); the services of the declaration on 127.0.0.1 (`_docker_pod.py`);
no network but the allowed loopback endpoints, each relayed into the container by `_netshim.py` over a Unix socket
that niceeval serves outside; every attempt to reach another address is refused and recorded by the pod's network
watcher (`connection_attempts`, `_docker_pod.py`). A command runs under `_netshim.py --lifeline`: what it leaves
running is killed when it ends, and when its `docker exec` client is killed (timeout, cancellation) the client's
stdin, a FIFO it holds open itself, closes inside and the helper kills the command's whole tree.

Scoring (`run_pytest`) runs outside, as niceeval's own code with niceeval's Python.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, cast

import anyio

from niceeval._core.results import SandboxRecord
from niceeval.sandbox._bwrap import EndpointForwarder, SandboxUnavailableError, loopback_endpoint
from niceeval.sandbox._docker_checkpoint import take_checkpoint
from niceeval.sandbox._docker_cli import LABEL, DockerSandboxError, docker, docker_argv, docker_problem, run_labels
from niceeval.sandbox._docker_compose import compose_environment
from niceeval.sandbox._docker_env import ComposeEnvironment, DockerEnvironment
from niceeval.sandbox._docker_images import ResolvedImage, find_declared, resolve_image
from niceeval.sandbox._docker_kept import sweep_left
from niceeval.sandbox._docker_pod import SHIM_INSIDE, PodSpec, mount_points, start_pod
from niceeval.sandbox._docker_reuse import CONTAINER_TMP, REUSED, Box, mount_points_in_tmp, reset_box
from niceeval.sandbox._launch import LaunchOptions
from niceeval.sandbox._network import WATCH_CONTROL, WATCH_SOCKET, AttemptRecorder
from niceeval.sandbox._workspace import LocalSandbox, Prepared

MOUNTED = ("workspace", "home", "tmp", "net", "agent-state")
"""The folders of the sandbox's temp directory its container sees (not `scoring-*`: the hidden tests)."""
_RELAY_READY_S = 10.0


@dataclass(frozen=True, kw_only=True)
class DockerRun:
    """Where a Docker sandbox comes from: the declaration, its resolved image, and its containers' labels."""

    environment: DockerEnvironment
    image: ResolvedImage
    labels: Mapping[str, str]
    read_only: tuple[Path, ...] = ()
    """The declaration's read-only folders, resolved."""

    @property
    def reuse_key(self) -> str:
        """What attempts that may share containers have in common: the eval, the image, the declaration."""
        return "\0".join((self.labels[f"{LABEL}.eval"], self.image.id, repr(self.environment)))


class DockerSandbox(LocalSandbox):
    """A `LocalSandbox` whose commands and launched processes run in one Docker container; see the module docstring.

    Create it with `await DockerSandbox.create(fixture, run=DockerRun(...), ...)` (the other arguments as for
    `LocalSandbox.create`); close it to remove its containers.

    Raises:
        SandboxUnavailableError: From `create`, when there is no docker command or no daemon.
        DockerSandboxError: From `create`, when a container or service does not start.
    """

    kind: ClassVar[str] = "docker"
    _box: Box | None = None
    _docker_run: DockerRun | None = None
    _allowed: tuple[str, ...] = ()

    @classmethod
    async def create(cls, fixture: Path, *, run: DockerRun | None = None, **options: Any) -> DockerSandbox:
        """Copy `fixture` into a new workspace (as `LocalSandbox.create`), then start its container and services.

        With `reuse=True` in the declaration, wait for the eval's previous attempt to close, and take over its
        containers, the sandbox folder reset to the fixture.
        """
        _check_docker()
        if run is None:
            raise DockerSandboxError("a DockerSandbox is created with run=DockerRun(...): its image and labels")
        if not run.environment.reuse:
            sandbox = await cls._fresh(fixture, run, options)
            sandbox._started.attempts.append(int(run.labels[f"{LABEL}.attempt"]))
            sandbox._recorder = _recorder(sandbox.path.parent)
            return sandbox
        box = await REUSED.take(run.reuse_key)
        try:
            if box is None:
                sandbox = await cls._fresh(fixture, run, options)
            else:
                await reset_box(box)
                assert box.checkpoint is not None
                restored = await super().create(fixture, root=box.root, prepared=box.checkpoint.prepared, **options)
                sandbox = cast(DockerSandbox, restored)
                sandbox._docker_run, sandbox._box = run, box
            sandbox._recorder = _recorder(sandbox.path.parent)
        except BaseException:
            REUSED.give_back(run.reuse_key, None if box is None else box)
            raise
        assert sandbox._box is not None
        sandbox._box.attempts.append(int(run.labels[f"{LABEL}.attempt"]))
        return sandbox

    @classmethod
    async def _fresh(cls, fixture: Path, run: DockerRun, options: dict[str, Any]) -> DockerSandbox:
        sandbox = cast(DockerSandbox, await super().create(fixture, **options))
        try:
            await sandbox._start(run)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await LocalSandbox.close(sandbox)
            raise
        return sandbox

    @property
    def container(self) -> str:
        """The workspace container's id."""
        return self._started.pod.workspace

    @property
    def labels(self) -> Mapping[str, str]:
        """The labels of the sandbox's containers (`niceeval.suite_run`, `niceeval.eval`, `niceeval.attempt`, ...).

        A reused container keeps the labels of the attempt that started it.
        """
        assert self._docker_run is not None
        return self._docker_run.labels

    @property
    def services(self) -> Mapping[str, str]:
        """Each service's container id, by name."""
        return self._started.pod.services

    @property
    def watcher(self) -> str | None:
        """The network watcher's container id (it shares the workspace container's network namespace)."""
        return self._started.pod.watcher

    @property
    def attempts(self) -> tuple[int, ...]:
        """The attempts that used this sandbox's containers so far, this one included (several with `reuse=True`)."""
        return tuple(self._started.attempts)

    def record(self, *, open_s: float) -> SandboxRecord:
        """What a run's result says about its sandbox: also its container, the attempts that shared it, its image."""
        assert self._docker_run is not None
        image = self._docker_run.image
        return SandboxRecord(
            kind=self.kind,
            open_s=round(open_s, 3),
            container=self.container[:12],
            attempts=list(self.attempts),
            image=image.ref,
            image_size_bytes=image.size_bytes,
            image_build_s=image.build_seconds,
            image_built_now=image.built_now,
        )

    async def close(self, *, keep: bool = False) -> Path | None:
        """Remove the containers (with `keep=True` leave them running, labelled), then close as `LocalSandbox`.

        A reused sandbox leaves its containers and folder to the eval's next attempt; with `keep=True` the path is
        returned, and the folder holds this attempt's work until the next attempt resets it.
        """
        if self.closed or self._box is None or self._docker_run is None:
            return await super().close(keep=keep)
        await self._stop_recording()  # first: the next attempt's recorder takes the same socket
        if self._docker_run.environment.reuse:
            self._box.keep = self._box.keep or keep
            REUSED.give_back(self._docker_run.reuse_key, self._box)
            kept = await super().close(keep=True)
            return kept if keep else None
        if keep:
            await self._box.keep_for_later()
        else:
            await self._box.remove()
        return await super().close(keep=keep)

    def allow_network(self, *endpoints: str) -> None:
        """Let every command reach these `host:port` loopback endpoints of the host (all others stay unreachable)."""
        self._allowed = (*self._allowed, *(loopback_endpoint(e) for e in endpoints))

    @property
    def _started(self) -> Box:
        assert self._box is not None, "the sandbox's containers are not started"
        return self._box

    async def _start(self, run: DockerRun) -> None:
        root = self.path.parent
        self._docker_run = run
        os.mkfifo(root / "lifeline")
        mounts = mount_points(root, MOUNTED)
        kept_in_tmp = container_tmp(root, (*mounts, *run.read_only))
        spec = PodSpec(
            tmp=root / CONTAINER_TMP,
            image=run.image.ref,
            services=run.environment.services,
            limits=run.environment.limits,
            mounts=mounts,
            read_only=run.read_only,
            env=run.environment.env,
            labels={**run.labels, f"{LABEL}.workspace": str(self.path), f"{LABEL}.fixture": str(self.fixture)},
            watch=root / "net" / WATCH_SOCKET,
        )
        checkpoint = None
        if run.environment.reuse:
            prepared = Prepared(baseline=self._baseline, skipped=self.skipped)
            checkpoint = await anyio.to_thread.run_sync(take_checkpoint, self.path, root, prepared)
        forwarder = EndpointForwarder(root / "net")
        try:
            pod = await start_pod(spec)
        except BaseException:
            forwarder.close()
            raise
        self._box = Box(root=root, pod=pod, forwarder=forwarder, checkpoint=checkpoint, kept_in_tmp=kept_in_tmp)

    async def _wrap(
        self, argv: tuple[str, ...], env: Mapping[str, str], cwd: Path, options: LaunchOptions
    ) -> tuple[str, ...]:
        assert self._docker_run is not None
        self._check_visible(options)
        for endpoint in dict.fromkeys((*self._allowed, *(loopback_endpoint(e) for e in options.allow_network))):
            await self._relay(endpoint)
        root = self.path.parent
        args = ["exec", "--interactive", "--workdir", str(cwd)]
        args += [item for name in env if name != "PATH" for item in ("--env", name)]  # values from the client's env
        file_size = self._docker_run.environment.limits.file_size
        shim = ["python3", "-I", "-S", SHIM_INSIDE, "--lifeline", "--fsize", str(file_size)]
        # The client's stdin is the FIFO opened read-write: never at its end while the client lives.
        lifeline = ["sh", "-c", 'exec "$@" <>"$0"', str(root / "lifeline")]
        return (*lifeline, *docker_argv(*args, self.container, *shim, "--", *argv))

    def _check_visible(self, options: LaunchOptions) -> None:
        assert self._docker_run is not None
        root = self.path.parent
        writable = [root / name for name in MOUNTED]
        readable = [*writable, *self._docker_run.read_only]
        for paths, visible, how in ((options.read_only, readable, "read"), (options.writable, writable, "written")):
            for path in paths:
                if not any(Path(path).is_relative_to(folder) for folder in visible):
                    raise DockerSandboxError(
                        f"{path} must be {how} in the Docker sandbox's container, which mounts only the workspace, "
                        "its HOME and TMPDIR (and docker_sandbox(read_only=[...])): put it in the image (its "
                        f"Dockerfile), or declare docker_sandbox(read_only=['{path}'])."
                    )

    async def _relay(self, endpoint: str) -> None:
        """Start the container's relay for `endpoint` (once), and wait until it listens."""
        box = self._started
        lock = box.relays.get(endpoint)
        if lock is not None:
            async with lock:
                return
        lock = box.relays[endpoint] = anyio.Lock()
        async with lock:
            path = box.forwarder.socket_for(endpoint)
            ready = path.with_suffix(".ready")
            shim = ["python3", "-I", "-S", SHIM_INSIDE, "--forward", f"{endpoint}={path}", "--ready", str(ready)]
            await docker("exec", "--detach", box.pod.workspace, *shim, "--", "sleep", "infinity")
            with anyio.move_on_after(_RELAY_READY_S):
                while not ready.exists():
                    await anyio.sleep(0.02)
                return
            raise DockerSandboxError(f"the relay of {endpoint} into the container did not start")


async def prepare_docker_run(
    environment: DockerEnvironment | ComposeEnvironment, *, bases: tuple[Path, ...], eval_id: str, attempt: int
) -> DockerRun:
    """Resolve the image of `environment` (found, pulled or built) and label the run's containers.

    Args:
        environment: The declaration (a Compose file's is read here, its services' images built).
        bases: Folders relative paths of the declaration are looked up in (the eval's folder, the project root).
        eval_id: The eval, for the containers' labels.
        attempt: The attempt (`--runs` index), for the labels.

    Raises:
        SandboxUnavailableError: No Docker daemon answers.
        DockerSandboxError: The image cannot be found, pulled or built, or the Compose file asks for what niceeval
            cannot do.
    """
    _check_docker()
    await sweep_left()
    if isinstance(environment, ComposeEnvironment):
        environment = await compose_environment(environment, bases)
    image = await resolve_image(environment, bases)
    read_only = tuple(find_declared(path, bases, "read_only") for path in environment.read_only)
    return DockerRun(environment=environment, image=image, labels=run_labels(eval_id, attempt), read_only=read_only)


def container_tmp(root: Path, mounted: Sequence[Path]) -> frozenset[Path]:
    """Make the host folder mounted as the container's `/tmp`, with the mount points of the container's other mounts
    under `/tmp` made in it first (by the user: the daemon would make them as root, and the user could not remove
    them); the entries of that folder holding them."""
    tmp = root / CONTAINER_TMP
    tmp.mkdir()
    for source, point in mount_points_in_tmp(root, mounted).items():
        if source.is_dir():
            point.mkdir(parents=True, exist_ok=True)
        else:
            point.parent.mkdir(parents=True, exist_ok=True)
            point.touch()
    return frozenset(tmp / point.relative_to(tmp).parts[0] for point in mount_points_in_tmp(root, mounted).values())


def _recorder(root: Path) -> AttemptRecorder:
    """The sandbox's end of its pod's network watcher (which listens on its control socket beside)."""
    return AttemptRecorder(root / "net" / WATCH_SOCKET, control=root / "net" / WATCH_CONTROL)


def _check_docker() -> None:
    problem = docker_problem()
    if problem is not None:
        raise SandboxUnavailableError(
            f"sandbox 'docker' is not available: {problem}. Nothing runs in its place: start Docker, or ask "
            "for sandbox='bwrap' (or 'local', which does not isolate)."
        )
