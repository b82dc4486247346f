"""Docker sandboxes found by their labels: listed, opened, diffed, stopped and pruned (`niceeval sandbox ...`).

Every workspace container carries its run's labels (`niceeval.suite_run`, `niceeval.eval`, `niceeval.attempt`, the
host and pid of the niceeval process that started it, the workspace and fixture paths); its services carry
`niceeval.pod`, the workspace container's id. A sandbox kept by `--keep-sandbox` is renamed `niceeval-kept-...`
(labels cannot change once set). So a container is one of: `running` (its process is alive on this host), `kept`,
or `left` (its process is gone without removing it: killed, crashed). The first Docker sandbox a process opens
removes the `left` ones of this host (`sweep_left`); `prune` removes every container and built image niceeval left.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio

from niceeval.sandbox._diff import Diff, compute_diff
from niceeval.sandbox._docker_cli import LABEL, DockerCommandError, DockerSandboxError, docker, docker_argv
from niceeval.sandbox._docker_images import BUILD_REPOSITORY
from niceeval.sandbox._docker_reuse import KEPT_PREFIX, remove_folder
from niceeval.sandbox._tree import fingerprint_tree
from niceeval.sandbox._workspace import DEFAULT_HIDDEN, DEFAULT_IGNORE

SandboxState = Literal["running", "kept", "left"]
_swept = False


@dataclass(frozen=True, kw_only=True)
class FoundSandbox:
    """A workspace container niceeval started, as its labels and Docker describe it."""

    id: str
    eval_id: str
    attempt: int
    suite_run: str
    state: SandboxState
    status: str
    """Docker's status (`Up 2 minutes`, `Exited (137) ...`)."""
    workspace: Path | None
    fixture: Path | None
    services: tuple[str, ...]
    """The services' container ids."""

    @property
    def short_id(self) -> str:
        return self.id[:12]


async def find_sandboxes() -> list[FoundSandbox]:
    """Every workspace container niceeval started on this daemon, oldest first."""
    ids = (await docker("ps", "--all", "--quiet", "--filter", f"label={LABEL}.role=workspace")).split()
    if not ids:
        return []
    details = json.loads(await docker("inspect", *ids))
    services = await _services_by_pod()
    found = [_describe(item, services.get(item["Id"], ())) for item in details]
    return sorted(found, key=lambda s: (s.suite_run, s.eval_id, s.attempt))


async def find_sandbox(ref: str) -> FoundSandbox:
    """The sandbox whose container id starts with `ref`.

    Raises:
        DockerSandboxError: None does, or several do.
    """
    matches = [s for s in await find_sandboxes() if s.id.startswith(ref)]
    if len(matches) != 1:
        known = ", ".join(s.short_id for s in await find_sandboxes()) or "none"
        what = "no" if not matches else "more than one"
        raise DockerSandboxError(
            f"{what} sandbox container id starts with {ref!r}; `niceeval sandbox list` shows {known}"
        )
    return matches[0]


async def stop_sandbox(sandbox: FoundSandbox) -> None:
    """Remove the sandbox's containers (its folder stays; `prune` removes it)."""
    await docker("rm", "--force", "--volumes", *sandbox.services, sandbox.id, timeout=60)


async def sandbox_logs(sandbox: FoundSandbox) -> str:
    """The services' logs, each under its name (the workspace container itself only idles)."""
    parts = []
    for service in sandbox.services:
        label = f'{{{{index .Config.Labels "{LABEL}.service"}}}}'
        name = (await docker("inspect", "--format", label, service)).strip()
        logs = docker_argv("logs", "--tail", "200", service)
        done = await anyio.run_process(logs, check=False, stderr=subprocess.STDOUT)
        parts.append(f"== service {name} ({service[:12]}) ==\n{done.stdout.decode(errors='replace').rstrip()}")
    return "\n\n".join(parts) or "(no services: the workspace container writes no log)"


async def kept_diff(sandbox: FoundSandbox) -> Diff:
    """What changed in the kept workspace since the fixture it was copied from.

    Raises:
        DockerSandboxError: The workspace or the fixture is gone.
    """
    workspace, fixture = sandbox.workspace, sandbox.fixture
    for path, what in ((workspace, "workspace"), (fixture, "fixture")):
        if path is None or not path.is_dir():
            raise DockerSandboxError(f"the {what} of sandbox {sandbox.short_id} is gone ({path}); no diff to show")
    assert workspace is not None and fixture is not None
    ignore = (*DEFAULT_IGNORE, *DEFAULT_HIDDEN)

    def diff() -> Diff:
        return compute_diff(fingerprint_tree(fixture, ignore=ignore, keep_text=True), workspace, ignore=ignore)

    return await anyio.to_thread.run_sync(diff)


def enter_argv(sandbox: FoundSandbox, command: list[str]) -> list[str]:
    """The command that opens a shell (or runs `command`) in the sandbox's workspace, as its commands ran."""
    interactive = ["--interactive", "--tty"] if not command else []
    workdir = ["--workdir", str(sandbox.workspace)] if sandbox.workspace is not None else []
    return docker_argv("exec", *interactive, *workdir, sandbox.id, *(command or ["sh"]))


@dataclass(frozen=True, kw_only=True)
class Pruned:
    """What `prune_sandboxes` removed."""

    containers: int
    images: int
    folders: int


async def prune_sandboxes(*, running_too: bool = False) -> Pruned:
    """Remove every container niceeval left (kept, or left by a killed run), their folders, and the built images.

    Args:
        running_too: Also remove the containers of niceeval processes still running (and then the images too:
            while a run is alive, its image stays).
    """
    sandboxes = await find_sandboxes()
    running = [s for s in sandboxes if s.state == "running" and not running_too]
    spared = {container[:12] for s in running for container in (s.id, *s.services)}
    every = (await docker("ps", "--all", "--quiet", "--filter", f"label={LABEL}=1")).split()
    containers = [c for c in every if c[:12] not in spared]
    if containers:
        await docker("rm", "--force", "--volumes", *containers, timeout=120)
    folders = [await _remove_folder(s) for s in sandboxes if s.short_id not in spared]
    images = [] if running else list(dict.fromkeys(await _built_images()))
    if images:
        await docker("image", "rm", "--force", *images, timeout=120)
    return Pruned(containers=len(containers), images=len(images), folders=sum(folders))


async def _built_images() -> list[str]:
    out = await docker("images", "--quiet", "--filter", f"label={LABEL}=1", BUILD_REPOSITORY)
    return out.split()


async def sweep_left() -> None:
    """Once per process: remove the containers (and folders) that killed runs on this host left behind."""
    global _swept
    if _swept:
        return
    _swept = True
    try:
        left = [s for s in await find_sandboxes() if s.state == "left"]
        for sandbox in left:
            await stop_sandbox(sandbox)
            await _remove_folder(sandbox)
    except DockerCommandError:
        return  # another process swept them first; a later prune removes what is still there


async def _remove_folder(sandbox: FoundSandbox) -> bool:
    root = sandbox.workspace.parent if sandbox.workspace is not None else None
    if root is None or not root.name.startswith("niceeval-sandbox-") or not root.is_dir():
        return False
    await anyio.to_thread.run_sync(remove_folder, root)
    return True


async def _services_by_pod() -> dict[str, tuple[str, ...]]:
    row = '{{.ID}} {{.Label "niceeval.pod"}}'
    out = await docker("ps", "--all", "--no-trunc", "--filter", f"label={LABEL}.role=service", "--format", row)
    pods: dict[str, list[str]] = {}
    for line in out.splitlines():
        service, _, pod = line.partition(" ")
        pods.setdefault(pod, []).append(service)
    return {pod: tuple(services) for pod, services in pods.items()}


def _describe(item: dict[str, object], services: tuple[str, ...]) -> FoundSandbox:
    config = item["Config"]
    assert isinstance(config, dict)
    labels: dict[str, str] = config.get("Labels") or {}
    name = str(item.get("Name", "")).lstrip("/")
    state = item["State"]
    assert isinstance(state, dict)
    workspace, fixture = labels.get(f"{LABEL}.workspace"), labels.get(f"{LABEL}.fixture")
    return FoundSandbox(
        id=str(item["Id"]),
        eval_id=labels.get(f"{LABEL}.eval", "?"),
        attempt=int(labels.get(f"{LABEL}.attempt", "0")),
        suite_run=labels.get(f"{LABEL}.suite_run", "?"),
        state=_state(name, labels),
        status=str(state.get("Status", "?")),
        workspace=Path(workspace) if workspace else None,
        fixture=Path(fixture) if fixture else None,
        services=services,
    )


def _state(name: str, labels: dict[str, str]) -> SandboxState:
    if name.startswith(KEPT_PREFIX):
        return "kept"
    if labels.get(f"{LABEL}.host") != socket.gethostname():
        return "running"  # another machine's process: it cannot be asked, so it is not taken for gone
    pid = labels.get(f"{LABEL}.pid", "")
    if not pid.isdigit() or int(pid) <= 0:
        return "left"
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return "left"
    except PermissionError:  # alive, another user's
        return "running"
    return "running"
