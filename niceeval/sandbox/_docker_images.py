"""The image of a Docker sandbox: a named image (pulled when missing), or a Dockerfile built once per content.

A Dockerfile's image is tagged `niceeval-build:<hash>`, the hash covering the Dockerfile and every file of its
build context, so an unchanged Dockerfile is built once per machine however many evals and processes use it, and an
edited one gets a new image. Builds of one content in one process wait for each other.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import anyio

from niceeval.sandbox._docker_cli import LABEL, DockerCommandError, DockerSandboxError, docker
from niceeval.sandbox._docker_env import DockerEnvironment

BUILD_REPOSITORY = "niceeval-build"
BUILD_SECONDS_LABEL = "niceeval.build_seconds"
"""On an image niceeval built: the seconds its build took."""
BUILD_TIMEOUT_S = 1800.0
_SKIPPED = (".git", "__pycache__", ".venv", "node_modules", ".niceeval")
_builds: dict[str, anyio.Lock] = {}


@dataclass(frozen=True, kw_only=True)
class ResolvedImage:
    """The image a sandbox runs: its reference, its id (what fixture setup's cache key names), how it was made."""

    ref: str
    id: str
    size_bytes: int
    build_seconds: float | None = None
    """Seconds its build took (a Dockerfile's image, when niceeval built it); None for a named image."""
    built_now: bool = False
    """This process built it (else it was on the daemon already)."""


async def resolve_image(environment: DockerEnvironment, bases: Sequence[Path]) -> ResolvedImage:
    """The image of `environment`: found, pulled or built.

    Args:
        environment: The declaration.
        bases: Folders a relative Dockerfile path is looked up in, in order (the eval's folder, the project root).

    Raises:
        DockerSandboxError: The Dockerfile is missing or fails to build, or the image neither exists nor pulls.
    """
    if environment.image is not None:
        return await _named(environment.image)
    assert environment.dockerfile is not None
    dockerfile = find_declared(environment.dockerfile, bases, "dockerfile")
    context = dockerfile.parent if environment.context is None else find_declared(environment.context, bases, "context")
    if not context.is_dir():
        raise DockerSandboxError(
            f"docker_sandbox(context={environment.context!r}) is not a folder ({context}); give the folder the "
            "Dockerfile's COPY lines read from."
        )
    return await build_image(dockerfile, context)


async def build_image(dockerfile: Path, context: Path) -> ResolvedImage:
    """The image of `dockerfile` with its build `context`, built unless an image of this content exists.

    Raises:
        DockerSandboxError: The build failed (its output is in the message).
    """
    digest = await anyio.to_thread.run_sync(_content_hash, dockerfile, context)
    tag = f"{BUILD_REPOSITORY}:{digest}"
    async with _builds.setdefault(tag, anyio.Lock()):
        found = await _inspect(tag)
        if found is not None:
            return found
        started = time.perf_counter()
        try:
            built = await docker(
                "build", "--quiet", "--force-rm", "--file", str(dockerfile),
                "--label", f"{LABEL}=1", "--label", f"{LABEL}.content={digest}", str(context),
                timeout=BUILD_TIMEOUT_S,
            )  # fmt: skip
        except DockerCommandError as error:
            raise DockerSandboxError(
                f"building {dockerfile} failed:\n{error}\nFix the Dockerfile (try `docker build -f {dockerfile} "
                f"{context}` to see every step)."
            ) from None
        await _tag_with_build_time(built.strip().splitlines()[-1], tag, time.perf_counter() - started)
        found = await _inspect(tag)
        assert found is not None, tag
        return replace(found, built_now=True)


async def _tag_with_build_time(image_id: str, tag: str, seconds: float) -> None:
    """Tag the built image, with how long its build took as a label (`niceeval sandbox list` shows it): labels are
    set when an image is made, so one more image is made from it, of a `FROM` line alone."""
    with tempfile.TemporaryDirectory(prefix="niceeval-label-") as folder:
        (Path(folder) / "Dockerfile").write_text(f"FROM {image_id}\n", encoding="utf-8")
        await docker(
            "build", "--quiet", "--tag", tag, "--label", f"{BUILD_SECONDS_LABEL}={seconds:.1f}", folder, timeout=120
        )


async def find_built_images() -> list[ResolvedImage]:
    """The images niceeval built from Dockerfiles on this daemon (`niceeval-build:<hash>`), with their size and the
    seconds their build took."""
    out = await docker("images", "--format", "{{.Repository}}:{{.Tag}}", "--filter", f"label={LABEL}=1", timeout=30)
    refs = [ref for ref in out.split() if ref.startswith(f"{BUILD_REPOSITORY}:")]
    found = [await _inspect(ref) for ref in refs]
    return [image for image in found if image is not None]


def find_declared(path: str, bases: Sequence[Path], key: str) -> Path:
    """A path of the declaration, looked up in `bases` in order.

    Raises:
        DockerSandboxError: It is in none of them.
    """
    for base in bases:
        candidate = (base / path).resolve()
        if candidate.exists():
            return candidate
    tried = ", ".join(str((base / path).resolve()) for base in bases)
    raise DockerSandboxError(
        f"docker_sandbox({key}={path!r}) does not exist (looked at {tried}); fix the path, relative to the eval "
        "file's folder or the project root."
    )


def _content_hash(dockerfile: Path, context: Path) -> str:
    digest = hashlib.sha256(dockerfile.read_bytes() + b"\0")
    for path in sorted(context.rglob("*")):
        rel = path.relative_to(context)
        if any(part in _SKIPPED for part in rel.parts) or not path.is_file():
            continue
        digest.update(rel.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


async def _inspect(ref: str) -> ResolvedImage | None:
    template = f'{{{{.Id}}}} {{{{.Size}}}} {{{{index .Config.Labels "{BUILD_SECONDS_LABEL}"}}}}'
    try:
        out = await docker("image", "inspect", "--format", template, ref, timeout=30)
    except DockerCommandError:
        return None
    image_id, size, seconds = (out.strip().split(" ") + ["", ""])[:3]
    return ResolvedImage(ref=ref, id=image_id, size_bytes=int(size or 0), build_seconds=_seconds(seconds))


def _seconds(label: str) -> float | None:
    try:
        return float(label)
    except ValueError:
        return None


async def _named(image: str) -> ResolvedImage:
    found = await _inspect(image)
    if found is not None:
        return found
    try:
        await docker("pull", "--quiet", image, timeout=BUILD_TIMEOUT_S)
    except DockerCommandError as error:
        raise DockerSandboxError(
            f"image {image!r} is not on this Docker daemon and pulling it failed: {error}\n"
            f"Build or load it (docker build -t {image} ..., docker load), or declare "
            "docker_sandbox(dockerfile='path/Dockerfile') to have niceeval build it."
        ) from None
    pulled = await _inspect(image)
    assert pulled is not None, image
    return pulled
