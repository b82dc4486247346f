"""`DockerSandbox`: `LocalSandbox`'s workspace, with every command run in a throwaway Docker container.

Same contract as the bubblewrap sandbox: the workspace, its HOME and TMPDIR mounted read-write at the same
paths, the image's system and nothing of the host's files, no network (`--network none`) except the allowed
loopback endpoints, forwarded into the container by `_netshim.py` (which needs `python3` in the image), and
`--pids-limit` for the process count. One container per command (`docker run --rm`), as the current user.
The image is `NICEEVAL_DOCKER_IMAGE`, or `python:3.12-slim`.

Scoring (`run_pytest`) runs outside, as niceeval's own code with niceeval's Python.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from niceeval._core.values import tail
from niceeval.sandbox._bwrap import EndpointForwarder, ProcessLimits, SandboxUnavailableError, loopback_endpoint
from niceeval.sandbox._launch import LaunchOptions
from niceeval.sandbox._workspace import LocalSandbox

DEFAULT_IMAGE = "python:3.12-slim"
_SHIM = Path(__file__).with_name("_netshim.py")
_SHIM_INSIDE = "/opt/niceeval/_netshim.py"


@functools.cache
def docker_problem() -> str | None:
    """Why Docker cannot run the sandbox here (no CLI, no daemon), or None when it can."""
    if shutil.which("docker") is None:
        return "the docker command is not installed"
    try:
        done = subprocess.run(
            ["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True, timeout=15
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"docker info failed: {error}"
    if done.returncode != 0:
        return f"no Docker daemon answers: {tail(done.stderr.strip(), 300) or f'exit status {done.returncode}'}"
    return None


class DockerSandbox(LocalSandbox):
    """A `LocalSandbox` whose commands and launched processes run in Docker containers; see the module docstring.

    Raises:
        SandboxUnavailableError: From `create`, when there is no docker command or no daemon.
    """

    _image: str = DEFAULT_IMAGE
    _limits: ProcessLimits = ProcessLimits()
    _forwarder: EndpointForwarder | None = None

    @classmethod
    async def create(cls, fixture: Path, **options: Any) -> DockerSandbox:
        """Copy `fixture` into a new workspace (as `LocalSandbox.create`), checking Docker answers first."""
        problem = docker_problem()
        if problem is not None:
            raise SandboxUnavailableError(
                f"sandbox 'docker' is not available: {problem}. Start Docker, or use sandbox='bwrap' or 'local'."
            )
        sandbox = await super().create(fixture, **options)
        assert isinstance(sandbox, DockerSandbox)
        sandbox._image = os.environ.get("NICEEVAL_DOCKER_IMAGE") or DEFAULT_IMAGE
        sandbox._forwarder = EndpointForwarder(sandbox.path.parent / "net")
        return sandbox

    async def close(self, *, keep: bool = False) -> Path | None:
        """Stop forwarding the allowed endpoints, then close as `LocalSandbox.close` does."""
        if self._forwarder is not None:
            self._forwarder.close()
        return await super().close(keep=keep)

    async def _wrap(
        self, argv: tuple[str, ...], env: Mapping[str, str], cwd: Path, options: LaunchOptions
    ) -> tuple[str, ...]:
        assert self._forwarder is not None
        root = self.path.parent
        args = ["docker", "run", "--rm", "--network", "none", "--user", f"{os.getuid()}:{os.getgid()}"]
        args += ["--pids-limit", str(self._limits.processes), "--workdir", str(cwd)]
        for path in (self.path, root / "home", root / "tmp", *options.writable):
            args += ["--volume", f"{path}:{path}"]
        for path in options.read_only:
            args += ["--volume", f"{path}:{path}:ro"]
        args += [item for name in env if name != "PATH" for item in ("--env", name)]  # values from the env
        shim: list[str] = []
        for endpoint in dict.fromkeys(loopback_endpoint(e) for e in options.allow_network):
            path = self._forwarder.socket_for(endpoint)
            args += ["--volume", f"{path}:{path}"]
            shim += ["--forward", f"{endpoint}={path}"]
        if shim:
            args += ["--volume", f"{_SHIM}:{_SHIM_INSIDE}:ro"]
            return (*args, self._image, "python3", "-I", "-S", _SHIM_INSIDE, *shim, "--", *argv)
        return (*args, self._image, *argv)
