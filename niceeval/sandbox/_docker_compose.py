"""A Compose file as a Docker sandbox: `compose_sandbox("compose.yaml", workspace_service="app")`.

The file is read when a run opens the sandbox (so a bad file errors that eval, not the import of the eval file), and
becomes the `DockerEnvironment` `docker_sandbox(...)` would declare: the workspace service's image or build is the
sandbox's image and its `environment` the workspace container's; every other service is a `Service` (its image,
or its build built once per content, its command, environment, `healthcheck` as `ready`, `depends_on` as the start
order). Network settings (`ports`, `networks`, ...) are replaced by the pod: every service listens on the one
loopback the workspace shares. A key this mapping has no answer for (`volumes`, `entrypoint`, ...) is an error
naming the file, its line, the service, the key and what to do instead; parsed with PyYAML, validated with pydantic.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from niceeval.sandbox._docker_cli import DockerSandboxError
from niceeval.sandbox._docker_env import ComposeEnvironment, DockerEnvironment, Service, dependency_problem
from niceeval.sandbox._docker_images import build_image, find_declared

REPLACED_BY_POD = ("ports", "expose", "networks", "network_mode", "hostname", "links", "extra_hosts", "dns")
"""Service keys read and set aside: the pod's one loopback replaces every network setting."""
COMPOSE_HEALTHCHECK = {"interval": 30.0, "retries": 3, "start_period": 0.0}
"""Compose's defaults, which the readiness timeout is computed from (`start_period + interval * retries`)."""
_FIXES = {
    "volumes": "the workspace is the fixture, mounted by niceeval; COPY other files into the image in its Dockerfile",
    "env_file": "list the variables under `environment:`",
    "entrypoint": "set ENTRYPOINT in the image's Dockerfile, or give the whole command under `command:`",
    "configs": "COPY the file into the image in its Dockerfile",
    "secrets": "pass the value under `environment:`",
    "args": "set the values with ARG defaults in the Dockerfile",
    "service_completed_successfully": "run the one-off command in the eval's setup=[...] instead",
}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(us|ms|s|m|h)")
_SECONDS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Build(_Strict):
    context: str = "."
    dockerfile: str = "Dockerfile"


def _duration(text: str) -> str:
    parts = _DURATION.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text.replace(" ", ""):
        raise ValueError(f"{text!r} is not a Compose duration (write e.g. '10s', '1m30s', '500ms')")
    return text


Duration = Annotated[str, AfterValidator(_duration)]


class _Healthcheck(_Strict):
    test: str | list[str] | None = None
    interval: Duration | None = None
    timeout: Duration | None = None
    retries: int | None = None
    start_period: Duration | None = None
    start_interval: Duration | None = None
    disable: bool = False


class _Dependency(_Strict):
    condition: Literal["service_started", "service_healthy"] = "service_started"
    required: bool = True
    restart: bool = False


class _Service(_Strict):
    image: str | None = None
    build: str | _Build | None = None
    command: str | list[str] | None = None
    environment: dict[str, str | int | float | bool | None] | list[str] | None = None
    healthcheck: _Healthcheck | None = None
    depends_on: list[str] | dict[str, _Dependency] | None = None
    ports: Any = None
    expose: Any = None
    networks: Any = None
    network_mode: Any = None
    hostname: Any = None
    links: Any = None
    extra_hosts: Any = None
    dns: Any = None


class _ComposeFile(_Strict):
    services: dict[str, _Service]
    version: str | None = None
    name: str | None = None
    networks: Any = None


@dataclass(frozen=True, kw_only=True)
class _Source:
    """The Compose file being read: its path, and its YAML node tree (for the line of a key in messages)."""

    path: Path
    root: Any

    def error(self, message: str, *where: str | int) -> DockerSandboxError:
        return DockerSandboxError(f"{self.path}{self._line(where)}: {message}")

    def _line(self, where: Sequence[str | int]) -> str:
        node, line = self.root, None
        for key in where:
            if not hasattr(node, "value") or not isinstance(node.value, list):
                break
            found = _child(node, key)
            if found is None:
                break
            line, node = found
        return "" if line is None else f", line {line}"


def _child(node: Any, key: str | int) -> tuple[int, Any] | None:
    """The line of `key` in a YAML mapping or sequence node, and the node under it."""
    if isinstance(key, int):
        items = node.value
        return (items[key].start_mark.line + 1, items[key]) if 0 <= key < len(items) else None
    for item in node.value:
        if isinstance(item, tuple) and getattr(item[0], "value", None) == key:
            return item[0].start_mark.line + 1, item[1]
    return None


async def compose_environment(declared: ComposeEnvironment, bases: Sequence[Path]) -> DockerEnvironment:
    """The `DockerEnvironment` a Compose file declares, its services' builds done.

    Raises:
        DockerSandboxError: The file is missing, is not YAML, has a key niceeval cannot honour, lacks the workspace
            service, or a service's build fails; the message names the file, line, service and key, and the fix.
    """
    path = find_declared(declared.path, bases, "compose")
    source, compose = _read(path)
    workspace_name = declared.workspace_service
    if workspace_name not in compose.services:
        raise source.error(
            f"no service {workspace_name!r} (it has {sorted(compose.services)}); name the service the agent works "
            "in: compose_sandbox(..., workspace_service='NAME').",
            "services",
        )
    workspace = compose.services[workspace_name]
    others = {name: service for name, service in compose.services.items() if name != workspace_name}
    problem = dependency_problem({name: _needs(service, workspace_name) for name, service in others.items()})
    if problem is not None:
        raise source.error(f"{problem}.", "services")
    services = [await _service(source, name, service, workspace_name) for name, service in others.items()]
    dockerfile, context = _build_paths(source, workspace_name, workspace)
    return DockerEnvironment(
        image=None if dockerfile is not None else workspace.image,
        dockerfile=None if dockerfile is None else str(dockerfile),
        context=None if context is None else str(context),
        services=tuple(services),
        reuse=declared.reuse,
        limits=declared.limits,
        read_only=declared.read_only,
        env=_environment(workspace.environment),
    )


def _read(path: Path) -> tuple[_Source, _ComposeFile]:
    import yaml

    text = path.read_text(encoding="utf-8")
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise DockerSandboxError(f"{path} is not valid YAML: {error}\nFix the file.") from None
    source = _Source(path=path, root=root)
    if not isinstance(data, dict):
        raise source.error("a Compose file is a mapping with `services:`; see docs/sandbox.md for an example.")
    _reject_interpolation(source, data, ())
    data = _without_extensions(data)
    try:
        return source, _ComposeFile.model_validate(data)
    except ValidationError as invalid:
        raise _explained(source, data, invalid) from None


def _without_extensions(value: Any) -> Any:
    """The file without Compose's `x-*` extension fields, which are the author's own notes."""
    if isinstance(value, dict):
        return {k: _without_extensions(v) for k, v in value.items() if not str(k).startswith("x-")}
    if isinstance(value, list):
        return [_without_extensions(item) for item in value]
    return value


def _reject_interpolation(source: _Source, value: Any, where: tuple[str | int, ...]) -> None:
    if isinstance(value, str) and re.search(r"\$(?!\$)\{?[A-Za-z_]", value.replace("$$", "")):
        raise source.error(
            f"{'.'.join(map(str, where))}: {value!r} uses ${{...}} variable interpolation, which niceeval does not "
            "do; write the value itself (or `$$` for a literal $).",
            *where,
        )
    if isinstance(value, dict):
        for key, inner in value.items():
            _reject_interpolation(source, inner, (*where, str(key)))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            _reject_interpolation(source, inner, (*where, index))


def _explained(source: _Source, data: Any, invalid: ValidationError) -> DockerSandboxError:
    """The most telling validation error as a sentence: where, which key, and what to do instead."""
    errors = invalid.errors()
    telling = [error for error in errors if error["type"] in ("extra_forbidden", "literal_error")]
    first = (telling or errors)[0]
    where = _data_path(data, first["loc"])
    service = f"service {where[1]!r}: " if len(where) > 1 and where[0] == "services" else ""
    key = str(where[-1]) if where else ""
    if first["type"] == "extra_forbidden":
        fix = _FIXES.get(key, "remove it, or declare this environment with docker_sandbox(...) in Python")
        return source.error(f"{service}key {key!r} is not supported by compose_sandbox: {fix}.", *where)
    if first["type"] == "literal_error" and isinstance(first.get("input"), str):
        value = first["input"]
        fix = _FIXES.get(value, "use service_started or service_healthy")
        return source.error(f"{service}{key}: {value!r} is not supported by compose_sandbox: {fix}.", *where)
    return source.error(f"{service}{'.'.join(map(str, where[2:] or where))}: {first['msg']}.", *where)


def _data_path(data: Any, loc: Sequence[str | int]) -> tuple[str | int, ...]:
    """A validation error's location as keys of the file: without the union members pydantic names on the way."""
    path: list[str | int] = []
    for part in loc:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            continue
        path.append(part)
    return tuple(path)


def _needs(service: _Service, workspace_name: str) -> tuple[str, ...]:
    """The services `service` waits for; the workspace's container always starts first, so not that one."""
    return tuple(name for name in service.depends_on or () if name != workspace_name)


async def _service(source: _Source, name: str, service: _Service, workspace_name: str) -> Service:
    dockerfile, context = _build_paths(source, name, service)
    if dockerfile is not None and context is not None:
        image = (await build_image(dockerfile, context)).ref
    else:
        assert service.image is not None
        image = service.image
    ready, timeout = _ready(service.healthcheck)
    return Service(
        name=name,
        image=image,
        command=_command(service.command),
        env=_environment(service.environment),
        ready=ready,
        ready_timeout=timeout,
        depends_on=_needs(service, workspace_name),
    )


def _build_paths(source: _Source, name: str, service: _Service) -> tuple[Path | None, Path | None]:
    """The Dockerfile and context of a service's `build:`, relative to the Compose file's folder; (None, None)
    for an `image:`."""
    if service.build is None:
        if service.image is None:
            raise source.error(f"service {name!r} has neither image: nor build:; give one.", "services", name)
        return None, None
    build = _Build(context=service.build) if isinstance(service.build, str) else service.build
    context = (source.path.parent / build.context).resolve()
    dockerfile = (context / build.dockerfile).resolve()
    if not context.is_dir() or not dockerfile.is_file():
        raise source.error(
            f"service {name!r}: build: {dockerfile} does not exist; fix the path (relative to the Compose file).",
            "services",
            name,
            "build",
        )
    return dockerfile, context


def _command(command: str | list[str] | None) -> tuple[str, ...]:
    if command is None:
        return ()
    return tuple(shlex.split(command)) if isinstance(command, str) else tuple(command)


def _environment(environment: Mapping[str, Any] | list[str] | None) -> dict[str, str]:
    """Compose's `environment:` as variables; a name without a value takes the value niceeval itself runs with."""
    if environment is None:
        return {}
    pairs = environment.items() if isinstance(environment, Mapping) else (_pair(item) for item in environment)
    values: dict[str, str] = {}
    for name, value in pairs:
        if value is None:
            if name in os.environ:
                values[name] = os.environ[name]
        else:
            values[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return values


def _pair(item: str) -> tuple[str, str | None]:
    name, equals, value = item.partition("=")
    return name, value if equals else None


def _ready(healthcheck: _Healthcheck | None) -> tuple[str | None, float]:
    """A healthcheck as a `ready` shell command and the seconds to wait for it."""
    if healthcheck is None or healthcheck.disable or healthcheck.test is None:
        return None, 60.0
    interval = _seconds(healthcheck.interval, COMPOSE_HEALTHCHECK["interval"])
    retries = healthcheck.retries if healthcheck.retries is not None else int(COMPOSE_HEALTHCHECK["retries"])
    timeout = _seconds(healthcheck.start_period, COMPOSE_HEALTHCHECK["start_period"]) + interval * max(retries, 1)
    test = healthcheck.test
    if isinstance(test, str):
        return test, timeout
    if not test or test[0] == "NONE":
        return None, 60.0
    if test[0] == "CMD-SHELL":
        return " ".join(test[1:]), timeout
    return shlex.join(test[1:] if test[0] == "CMD" else test), timeout


def _seconds(duration: str | None, default: float) -> float:
    """A Compose duration (`1m30s`, `500ms`, checked by the model) in seconds."""
    if duration is None:
        return default
    return sum(float(number) * _SECONDS[unit] for number, unit in _DURATION.findall(duration))
