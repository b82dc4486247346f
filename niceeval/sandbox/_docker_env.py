"""Docker environments as declarations: `docker_sandbox(image=... | dockerfile=..., services=[service(...)])`.

A declaration only records what the eval asks for; nothing talks to Docker until a run opens its sandbox
(`_docker.py`). Relative paths (`dockerfile=`, `context=`) are resolved when the run starts, as `fixture=` is:
beside the eval file first, then under the project root.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import ClassVar, Literal

from niceeval._core.errors import UsageError
from niceeval._core.sandbox_kinds import SandboxDeclaration

DEFAULT_IMAGE = "python:3.12-slim"
"""The image of `sandbox="docker"` when `NICEEVAL_DOCKER_IMAGE` names none."""
_SERVICE_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,62}")


@dataclass(frozen=True, kw_only=True)
class ContainerLimits:
    """What each container of a Docker sandbox may use (Docker's `--cpus`, `--memory`, `--pids-limit`)."""

    cpus: float = 2.0
    """CPUs' worth of time per container."""
    memory: str = "4g"
    """Memory per container, in Docker's units (`512m`, `4g`); past it the kernel kills the biggest process."""
    pids: int = 1024
    """Processes and threads per container: a fork bomb stops here."""
    file_size: int = 1 << 30
    """Largest file a command may write, in bytes."""


@dataclass(frozen=True, kw_only=True)
class Service:
    """A container beside the workspace's (a database, a web server), sharing its network: reachable on 127.0.0.1."""

    name: str
    image: str
    command: tuple[str, ...] = ()
    """The service's command; empty: the image's own."""
    env: Mapping[str, str] = field(default_factory=dict)
    ready: str | None = None
    """A shell command run in the service's container until it exits 0 (`pg_isready -h 127.0.0.1`); None: started
    is ready."""
    ready_timeout: float = 60.0
    """Seconds to wait for `ready` before the run is errored, with the service's log."""
    depends_on: tuple[str, ...] = ()
    """Services started (and ready) before this one."""


@dataclass(frozen=True, kw_only=True)
class DockerEnvironment(SandboxDeclaration):
    """A Docker sandbox as declared by `docker_sandbox(...)`; see its docstring."""

    kind: ClassVar[Literal["docker"]] = "docker"
    image: str | None = None
    dockerfile: str | None = None
    context: str | None = None
    services: tuple[Service, ...] = ()
    reuse: bool = False
    limits: ContainerLimits = ContainerLimits()
    read_only: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    """The workspace container's own environment variables (every command in it sees them)."""

    def describe(self) -> str:
        """The environment in a few words, for messages and reports."""
        source = f"image {self.image}" if self.image is not None else f"Dockerfile {self.dockerfile}"
        return source + "".join(f", service {s.name}" for s in self.services)


@dataclass(frozen=True, kw_only=True)
class ComposeEnvironment(SandboxDeclaration):
    """A Docker sandbox as a Compose file declares it (`compose_sandbox(...)`); read when a run opens it."""

    kind: ClassVar[Literal["docker"]] = "docker"
    path: str
    workspace_service: str
    reuse: bool = False
    limits: ContainerLimits = ContainerLimits()
    read_only: tuple[str, ...] = ()

    def describe(self) -> str:
        """The environment in a few words, for messages and reports."""
        return f"Compose file {self.path}, workspace service {self.workspace_service}"


def docker_sandbox(
    *,
    image: str | None = None,
    dockerfile: str | PurePath | None = None,
    context: str | PurePath | None = None,
    services: Sequence[Service] = (),
    reuse: bool = False,
    limits: ContainerLimits | None = None,
    read_only: Sequence[str | PurePath] = (),
    env: Mapping[str, str] | None = None,
) -> DockerEnvironment:
    """A Docker container as the sandbox of an eval: `@define_eval(fixture=..., sandbox=docker_sandbox(...))`.

    One container per eval run: the workspace is bind-mounted at the same path, and every command (the eval's
    `t.sandbox.run_command`, setup, an agent's CLI) runs in it with `docker exec`, as the current user, with no
    network but the allowed loopback endpoints and a read-only system. The image needs `python3` (niceeval runs a
    small standard-library helper beside each command).

    Args:
        image: An image on the Docker daemon (pulled when missing). Without `image` and `dockerfile`: the image
            `NICEEVAL_DOCKER_IMAGE` names, else `python:3.12-slim` (as `sandbox="docker"`).
        dockerfile: A Dockerfile to build instead, once per content (tagged `niceeval-build:<hash>`, reused).
        context: The build context of `dockerfile`; its folder by default.
        services: Containers started first, beside the workspace's, each awaited with its `ready` check.
        reuse: Keep one container (and its services) across an eval's attempts, the workspace reset between them.
        limits: CPUs, memory, processes and file size per container.
        read_only: Host folders mounted read-only at the same paths, e.g. a coding agent's CLI installation
            (`node_modules`) when the image does not provide it. Relative ones are looked up as `dockerfile`.
        env: Environment variables of the workspace container, seen by every command run in it (`DATABASE_URL`).

    Raises:
        UsageError: Both `image` and `dockerfile`, `context` without `dockerfile`, two services with one name, or a
            service depending on one that is not declared (or on itself, through others).
    """
    if image is not None and dockerfile is not None:
        raise UsageError(
            "docker_sandbox() takes image='NAME' or dockerfile='path/Dockerfile', not both: "
            f"got image={image!r}, dockerfile={dockerfile!r}."
        )
    if dockerfile is None:
        image = image or os.environ.get("NICEEVAL_DOCKER_IMAGE") or DEFAULT_IMAGE
    if context is not None and dockerfile is None:
        raise UsageError("docker_sandbox(context=...) is the build context of a Dockerfile: give dockerfile= too.")
    names = [s.name for s in services]
    if len(set(names)) != len(names):
        raise UsageError(f"docker_sandbox(services=...) names each service once, got {names}.")
    problem = dependency_problem({s.name: s.depends_on for s in services})
    if problem is not None:
        raise UsageError(f"docker_sandbox(services=...): {problem}.")
    return DockerEnvironment(
        image=image,
        dockerfile=None if dockerfile is None else str(dockerfile),
        context=None if context is None else str(context),
        services=tuple(services),
        reuse=reuse,
        limits=limits or ContainerLimits(),
        read_only=tuple(str(path) for path in read_only),
        env=dict(env or {}),
    )


def dependency_problem(depends_on: Mapping[str, Sequence[str]]) -> str | None:
    """Why services with these dependencies cannot start in order (an unknown name, a cycle), or None."""
    for name, needed in depends_on.items():
        unknown = [other for other in needed if other not in depends_on]
        if unknown:
            return f"service {name!r} depends on {unknown[0]!r}, which is not declared; declare it or drop it"
    done: set[str] = set()
    while len(done) < len(depends_on):
        startable = [name for name, needed in depends_on.items() if name not in done and set(needed) <= done]
        if not startable:
            waiting = sorted(set(depends_on) - done)
            return f"services {waiting} cannot start: their depends_on form a cycle; break it"
        done.update(startable)
    return None


def service(
    name: str,
    *,
    image: str,
    command: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    ready: str | None = None,
    ready_timeout: float = 60.0,
    depends_on: Sequence[str] = (),
) -> Service:
    """A service container beside the workspace's, for `docker_sandbox(services=[...])`.

    It shares the workspace container's network namespace (as in a Kubernetes pod): the workspace reaches it on
    127.0.0.1 at the port it listens on, and nothing else can.

    Args:
        name: Its name in messages and labels (lowercase letters, digits, `_.-`).
        image: Its image (pulled when missing).
        command: Its command; the image's own by default.
        env: Its environment variables.
        ready: A shell command run in its container until it exits 0, e.g. `"pg_isready -h 127.0.0.1"`.
        ready_timeout: Seconds to wait for `ready`.
        depends_on: Names of services of the same sandbox started, and ready, before this one.

    Raises:
        UsageError: A name Docker labels cannot hold, `command` given as one string, or a timeout that is not
            positive.
    """
    if not _SERVICE_NAME.fullmatch(name):
        raise UsageError(f"service({name!r}): a service name is lowercase letters, digits and _.- (e.g. 'db').")
    if isinstance(command, str):
        raise UsageError(f"service({name!r}, command=...) is a list of arguments, e.g. {command.split()!r}.")
    if ready_timeout <= 0:
        raise UsageError(f"service({name!r}, ready_timeout=...) is a number of seconds above 0, got {ready_timeout}.")
    if isinstance(depends_on, str):
        raise UsageError(f"service({name!r}, depends_on=...) is a list of service names, e.g. [{depends_on!r}].")
    return Service(
        name=name,
        image=image,
        command=tuple(command),
        env=dict(env or {}),
        ready=ready,
        ready_timeout=ready_timeout,
        depends_on=tuple(depends_on),
    )


def compose_sandbox(
    path: str | PurePath,
    *,
    workspace_service: str,
    reuse: bool = False,
    limits: ContainerLimits | None = None,
    read_only: Sequence[str | PurePath] = (),
) -> ComposeEnvironment:
    """A Docker sandbox declared by a Compose file: `@define_eval(fixture=..., sandbox=compose_sandbox(...))`.

    The file is read when a run opens the sandbox, as `docker_sandbox(...)` would declare it: `workspace_service`'s
    `image` or `build` is the image the workspace container runs (its `environment` that container's variables; its
    `command` is replaced, as the container idles while commands are `docker exec`ed into it), and every other
    service runs beside it with its `image` or `build`, `command`, `environment`, `healthcheck` (the `ready` check)
    and `depends_on` (the start order). Network settings (`ports`, `networks`, ...) are replaced by the pod: services
    listen on the one loopback the workspace shares. Any other key errors the eval, naming the file, line, service,
    key and what to do instead.

    Args:
        path: The Compose file, relative to the eval file's folder or the project root (`build:` paths are relative
            to the file's own folder).
        workspace_service: The service the agent works in.
        reuse: As `docker_sandbox(reuse=...)`.
        limits: As `docker_sandbox(limits=...)`, for every container.
        read_only: As `docker_sandbox(read_only=...)`.

    Raises:
        UsageError: An empty `workspace_service`.
    """
    if not workspace_service:
        raise UsageError("compose_sandbox(..., workspace_service='app') names the service the agent works in.")
    return ComposeEnvironment(
        path=str(path),
        workspace_service=workspace_service,
        reuse=reuse,
        limits=limits or ContainerLimits(),
        read_only=tuple(str(item) for item in read_only),
    )
