"""A Docker sandbox's containers: the workspace's, and its services sharing its network namespace (a pod).

The workspace container idles (`sleep infinity` under Docker's init) while commands are `docker exec`ed into it.
It has no network (`--network none`: loopback only), a read-only system with a fresh `/tmp` (a host folder of the
sandbox's, so a reused container's is emptied without a command inside), no capabilities,
and runs as the current user, so files it writes in the bind-mounted workspace are the user's. Each service
runs with `--network container:<workspace>`: all of them and the workspace share one loopback, and no bridge
network is ever created. Services are started after the workspace container (whose namespace they join) and
awaited with their `ready` command before any command of the eval runs.

One more container joins the namespace: the network watcher (`_netshim.py --watch`; labelled as a service named
`niceeval-netwatch`, so a kept sandbox's `stop` removes it too, but not among `Pod.services`), the only container
with capabilities (CAP_NET_ADMIN and CAP_NET_RAW, nothing else). It routes every address to the namespace's
loopback and records each attempt to reach outside (`_network.py`); the workspace container gets IPv6 on its
loopback (Docker turns it off under `--network none`), so IPv6 attempts are refused and recorded too.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from niceeval.sandbox._docker_cli import DockerCommandError, DockerSandboxError, docker, docker_argv, label_flags
from niceeval.sandbox._docker_env import ContainerLimits, Service
from niceeval.sandbox._network import WATCH_CONTROL

SHIM_INSIDE = "/opt/niceeval/_netshim.py"
WATCHER = "niceeval-netwatch"
"""The network watcher's service name (its label)."""
_WATCH_READY_S = 30.0
_SHIM = Path(__file__).with_name("_netshim.py")
_READY_POLL_S = 0.2
_LOG_LINES = 40


@dataclass(frozen=True, kw_only=True)
class PodSpec:
    """Everything a pod is started from."""

    image: str
    services: tuple[Service, ...]
    limits: ContainerLimits
    mounts: tuple[Path, ...]
    """Host folders bind-mounted read-write at the same paths (the workspace, its HOME and TMPDIR, ...)."""
    read_only: tuple[Path, ...]
    """Host folders bind-mounted read-only at the same paths (a coding agent's CLI)."""
    tmp: Path
    """The host folder mounted as the container's `/tmp` (emptied on the host when a reused container is reset)."""
    labels: Mapping[str, str]
    env: Mapping[str, str] = field(default_factory=dict)
    """The workspace container's environment variables."""
    watch: Path | None = None
    """The Unix socket the network watcher reports to (in a mounted folder); None: no watcher."""


@dataclass(frozen=True, kw_only=True)
class Pod:
    """A started pod: the workspace container's id and each service's."""

    workspace: str
    services: Mapping[str, str]
    watcher: str | None = None
    """The network watcher's container id (not among `services`: the declaration has no such service)."""

    @property
    def containers(self) -> tuple[str, ...]:
        return (*self.services.values(), *([self.watcher] if self.watcher else []), self.workspace)

    async def remove(self) -> None:
        """Remove every container of the pod (services first), whatever state they are in."""
        with anyio.CancelScope(shield=True):
            await docker("rm", "--force", "--volumes", *self.containers, timeout=60)


async def start_pod(spec: PodSpec) -> Pod:
    """Start the workspace container, then the services (each after the ones it depends on are ready), and wait
    until each is ready.

    Raises:
        DockerSandboxError: A container did not start, the image has no python3, or a service never became ready
            (its log is in the message). Whatever was started is removed first.
    """
    workspace = (await docker("run", "--detach", *_workspace_flags(spec), spec.image, "infinity")).strip()
    services: dict[str, str] = {}
    watcher = None
    try:
        await _check_python(workspace, spec.image)
        if spec.watch is not None:
            watcher = await _start_watcher(spec, spec.watch, workspace)
        try:
            ready = {declared.name: anyio.Event() for declared in spec.services}
            async with anyio.create_task_group() as group:
                for declared in spec.services:
                    group.start_soon(_start_in_order, declared, spec, workspace, services, ready)
        except ExceptionGroup as failures:
            raise _one_error(failures) from None
    except BaseException:
        await Pod(workspace=workspace, services=services, watcher=watcher).remove()
        raise
    return Pod(workspace=workspace, services=services, watcher=watcher)


def _one_error(failures: ExceptionGroup[Exception]) -> Exception:
    """The services' failures as one error (each service's message), or the group when something else failed."""
    matched, rest = failures.split(DockerSandboxError)
    if rest is not None or matched is None:
        return failures
    return DockerSandboxError("\n\n".join(str(error) for error in matched.exceptions))


def _workspace_flags(spec: PodSpec) -> list[str]:
    limits = spec.limits
    flags = [*label_flags({**spec.labels, "niceeval.role": "workspace"}), "--init", "--network", "none"]
    flags += ["--read-only", "--volume", f"{spec.tmp}:/tmp", "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
    flags += ["--user", f"{os.getuid()}:{os.getgid()}", "--entrypoint", "sleep"]
    flags += ["--sysctl", "net.ipv6.conf.all.disable_ipv6=0", "--sysctl", "net.ipv6.conf.lo.disable_ipv6=0"]
    flags += ["--cpus", f"{limits.cpus:g}", "--memory", limits.memory, "--pids-limit", str(limits.pids)]
    for path in spec.mounts:
        flags += ["--volume", f"{path}:{path}"]
    for path in spec.read_only:
        flags += ["--volume", f"{path}:{path}:ro"]
    flags += [flag for name, value in spec.env.items() for flag in ("--env", f"{name}={value}")]
    return [*flags, "--volume", f"{_SHIM}:{SHIM_INSIDE}:ro"]


async def _check_python(container: str, image: str) -> None:
    try:
        await docker("exec", container, "python3", "-I", "-S", "-c", "", timeout=60)
    except DockerCommandError as error:
        raise DockerSandboxError(
            f"image {image!r} has no python3 ({error}); niceeval runs a small standard-library helper beside each "
            "command in the container. Install it in the image (Debian: RUN apt-get install -y python3-minimal)."
        ) from None


async def _start_watcher(spec: PodSpec, report: Path, workspace: str) -> str:
    """Start the network watcher in the workspace's namespace, and wait until every address is routed to it."""
    labels = {**spec.labels, "niceeval.role": "service", "niceeval.service": WATCHER, "niceeval.pod": workspace}
    flags = [*label_flags(labels), "--network", f"container:{workspace}", "--read-only", "--cap-drop", "ALL"]
    flags += ["--cap-add", "NET_ADMIN", "--cap-add", "NET_RAW", "--security-opt", "no-new-privileges"]
    flags += ["--user", "0:0", "--entrypoint", "python3", "--volume", f"{_SHIM}:{SHIM_INSIDE}:ro"]
    flags += ["--volume", f"{report.parent}:{report.parent}", "--pids-limit", "64", "--memory", "64m"]
    ready = report.with_suffix(".ready")
    control = report.with_name(WATCH_CONTROL)
    shim = ["-I", "-S", SHIM_INSIDE, "--watch", str(report), "--control", str(control), "--ready", str(ready)]
    shim += ["--", "sleep", "infinity"]
    container = (await docker("run", "--detach", *flags, spec.image, *shim)).strip()
    with anyio.move_on_after(_WATCH_READY_S):
        while not ready.exists():
            if not await _running(container):
                break
            await anyio.sleep(0.05)
        else:
            ready.unlink()  # written by the watcher's root: the user may remove it from their own folder
            return container
    log = await _log(container)
    await docker("rm", "--force", container, timeout=60)
    raise DockerSandboxError(f"the sandbox's network watcher did not start; its log:\n{log}")


async def _start_in_order(
    declared: Service, spec: PodSpec, workspace: str, started: dict[str, str], ready: Mapping[str, anyio.Event]
) -> None:
    for needed in declared.depends_on:
        await ready[needed].wait()
    await _start_service(declared, spec, workspace, started)
    ready[declared.name].set()


async def _start_service(declared: Service, spec: PodSpec, workspace: str, started: dict[str, str]) -> None:
    limits = spec.limits
    labels = {**spec.labels, "niceeval.role": "service", "niceeval.service": declared.name, "niceeval.pod": workspace}
    flags = label_flags(labels)
    flags += ["--network", f"container:{workspace}", "--pids-limit", str(limits.pids), "--memory", limits.memory]
    flags += ["--cpus", f"{limits.cpus:g}", *(f for k, v in declared.env.items() for f in ("--env", f"{k}={v}"))]
    try:
        container = await docker("run", "--detach", *flags, declared.image, *declared.command)
    except DockerCommandError as error:
        raise DockerSandboxError(
            f"service {declared.name!r} did not start: {error}\nFix its image or command in service(...)."
        ) from None
    started[declared.name] = container.strip()
    if declared.ready is not None:
        await _await_ready(declared, started[declared.name])


async def _await_ready(declared: Service, container: str) -> None:
    assert declared.ready is not None
    with anyio.move_on_after(declared.ready_timeout):
        while True:
            try:
                await docker("exec", container, "sh", "-c", declared.ready, timeout=declared.ready_timeout)
                return
            except DockerCommandError:
                if not await _running(container):
                    raise DockerSandboxError(
                        f"service {declared.name!r} exited before it was ready; its log:\n{await _log(container)}\n"
                        "Fix its image or command in service(...)."
                    ) from None
            await anyio.sleep(_READY_POLL_S)
    raise DockerSandboxError(
        f"service {declared.name!r} was not ready within {declared.ready_timeout:g} s ({declared.ready!r} never "
        f"exited 0); its log:\n{await _log(container)}\nFix the service, its ready= check, or raise "
        "service(ready_timeout=...)."
    )


async def _running(container: str) -> bool:
    try:
        return (await docker("inspect", "--format", "{{.State.Running}}", container, timeout=30)).strip() == "true"
    except DockerCommandError:
        return False


async def _log(container: str) -> str:
    with anyio.move_on_after(30):
        done = await anyio.run_process(
            docker_argv("logs", "--tail", str(_LOG_LINES), container), stderr=subprocess.STDOUT, check=False
        )
        return done.stdout.decode(errors="replace").strip() or "(empty)"
    return "(docker logs did not answer)"


def mount_points(root: Path, names: Sequence[str]) -> tuple[Path, ...]:
    """The folders of a sandbox's temp directory that its container sees (created here when missing)."""
    for name in names:
        (root / name).mkdir(exist_ok=True)
    return tuple(root / name for name in names)
