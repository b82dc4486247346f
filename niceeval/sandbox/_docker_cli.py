"""Talking to Docker: through its command line, the one way niceeval does (docs/design/sandbox.md says why).

`docker_problem` says once per process whether a daemon answers; `docker` runs one CLI command and raises
`DockerCommandError` with its stderr when it fails. Every container and image niceeval makes carries the label
`niceeval=1`, so `niceeval sandbox prune` finds them all.
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
import subprocess
import uuid

import anyio

from niceeval._core.errors import NiceevalError
from niceeval._core.values import tail

LABEL = "niceeval"
"""Label on everything niceeval creates in Docker (value `1`)."""
SUITE_RUN = uuid.uuid4().hex[:12]
"""This process's suite run, as containers are labelled (`niceeval.suite_run`)."""
_HOST = socket.gethostname()


class DockerSandboxError(NiceevalError):
    """A Docker sandbox could not be built or started: a missing Dockerfile, an unknown image, a service never ready.

    The eval is errored with this message (cause and fix); the other evals run.
    """


class DockerCommandError(DockerSandboxError):
    """A docker command exited non-zero; the message holds its stderr."""


@functools.cache
def docker_problem() -> str | None:
    """Why Docker cannot run a sandbox here (no CLI, no daemon), or None when it can."""
    if shutil.which("docker") is None:
        return "the docker command is not installed (Debian/Ubuntu: apt-get install docker.io)"
    try:
        done = subprocess.run(
            [*docker_argv(), "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True, timeout=15
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"docker info failed: {error}"
    if done.returncode != 0:
        reason = tail(done.stderr.strip(), 300) or f"exit status {done.returncode}"
        return f"no Docker daemon answers ({reason}); start it (systemctl start docker, or dockerd as root)"
    return None


def docker_argv(*args: str) -> list[str]:
    """The docker CLI with `args`; `DOCKER_HOST` is passed on the command line, as sandboxed commands get a scrubbed
    environment."""
    host = os.environ.get("DOCKER_HOST")
    return ["docker", *(("--host", host) if host else ()), *args]


async def docker(*args: str, timeout: float = 120.0) -> str:
    """Run `docker ARGS`, returning its stdout.

    Raises:
        DockerCommandError: It exited non-zero (the message holds its stderr) or ran past `timeout`.
    """
    argv = docker_argv(*args)
    with anyio.move_on_after(timeout) as deadline:
        done = await anyio.run_process(argv, check=False)
    if deadline.cancelled_caught:
        raise DockerCommandError(f"`docker {' '.join(args[:3])} ...` did not finish within {timeout:g} s")
    if done.returncode != 0:
        stderr = done.stderr.decode(errors="replace").strip()
        raise DockerCommandError(stderr[-2000:] or f"`docker {args[0]}` exited with status {done.returncode}")
    return done.stdout.decode(errors="replace")


def run_labels(eval_id: str, attempt: int) -> dict[str, str]:
    """The labels of a run's containers: whose they are, and which process to ask whether it still runs."""
    return {
        LABEL: "1",
        f"{LABEL}.suite_run": SUITE_RUN,
        f"{LABEL}.eval": eval_id,
        f"{LABEL}.attempt": str(attempt),
        f"{LABEL}.host": _HOST,
        f"{LABEL}.pid": str(os.getpid()),
    }


def label_flags(labels: dict[str, str]) -> list[str]:
    return [flag for name, value in labels.items() for flag in ("--label", f"{name}={value}")]
