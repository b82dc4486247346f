"""What the Docker sandbox tests share: the base image, a check that Docker answers, and container counts by label."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from niceeval.sandbox import DockerSandbox, docker_problem, docker_sandbox, prepare_docker_run
from niceeval.sandbox._docker_env import DockerEnvironment

BASE_IMAGE = "niceeval-base:bookworm"
"""Built by scripts/docker.sh from Debian's packages (no registry is reachable from CI)."""


def needs_docker() -> None:
    """Skip without a daemon or the base image; under CI=true fail instead: CI runs every Docker test."""
    problem = docker_problem()
    if problem is None and subprocess.run(["docker", "image", "inspect", BASE_IMAGE], capture_output=True).returncode:
        problem = f"the image {BASE_IMAGE} is missing (bash scripts/docker.sh start builds it)"
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {problem}", pytrace=False)
        pytest.skip(problem)


def containers(*labels: str) -> list[str]:
    """Ids of the containers (running or not) carrying every one of `labels` (`name=value`)."""
    filters = [item for label in labels for item in ("--filter", f"label={label}")]
    done = subprocess.run(["docker", "ps", "--all", "--quiet", *filters], capture_output=True, text=True, check=True)
    return done.stdout.split()


async def open_docker(fixture: Path, environment: DockerEnvironment | None = None) -> DockerSandbox:
    """A Docker sandbox of `fixture` whose containers are labelled with an eval id of their own (`eval_label`)."""
    environment = environment or docker_sandbox(image=BASE_IMAGE)
    run = await prepare_docker_run(environment, bases=(fixture.parent,), eval_id=f"tests::{uuid.uuid4()}", attempt=0)
    return await DockerSandbox.create(fixture, run=run)


def eval_label(sandbox: DockerSandbox) -> str:
    """The label filter that finds exactly `sandbox`'s containers."""
    return f"niceeval.eval={sandbox.labels['niceeval.eval']}"
