"""The Docker sandbox's costs, each as a ratio measured in one run (bench/docker_sandbox.md holds the figures).

Run by hand, with a Docker daemon and the base image (`bash scripts/docker.sh start`):
`python bench/docker_sandbox.py [--commands 30] [--attempts 10] [--image niceeval-base:bookworm]`.

- per command: `sandbox.run_command("true")` (the lifeline FIFO, `docker exec -i`, the helper inside, the
  capped-output reader) against a bare `docker exec CONTAINER true` in the same container;
- per eval command: a command as `t.sandbox` runs it (inside `eval_writes()`: the workspace snapshotted before
  and after, so the agent's diff can leave it out) against `sandbox.run_command("true")` alone;
- per attempt: opening the sandbox of an eval's next attempt with `reuse=True` (the box taken over, the workspace
  restored from the checkpoint: the 10 files the previous attempt changed and the one it added, HOME, TMPDIR and
  the container's /tmp emptied on the host) against opening a fresh one (a new container started).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from niceeval.sandbox import DockerSandbox, close_reused, docker_sandbox, prepare_docker_run


def _fixture(root: Path, files: int) -> Path:
    folder = root / "fixture"
    for index in range(files):
        path = folder / f"pkg{index % 10}" / f"module{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"VALUE = {index}\n" * 20)
    return folder


async def _per_command(fixture: Path, image: str, commands: int) -> tuple[float, float, float]:
    run = await prepare_docker_run(docker_sandbox(image=image), bases=(fixture,), eval_id="bench::cmd", attempt=0)
    async with await DockerSandbox.create(fixture, run=run) as sandbox:
        await sandbox.run_command("true")
        sandboxed, bare, authored = [], [], []
        for _ in range(commands):
            start = time.perf_counter()
            await sandbox.run_command("true")
            sandboxed.append(time.perf_counter() - start)
            start = time.perf_counter()
            await anyio.run_process(["docker", "exec", sandbox.container, "true"])
            bare.append(time.perf_counter() - start)
            start = time.perf_counter()
            async with sandbox.eval_writes():
                await sandbox.run_command("true")
            authored.append(time.perf_counter() - start)
    return statistics.median(sandboxed), statistics.median(bare), statistics.median(authored)


async def _per_attempt(fixture: Path, image: str, attempts: int) -> tuple[float, float]:
    fresh, reused = [], []
    for reuse, times in ((False, fresh), (True, reused)):
        environment = docker_sandbox(image=image, reuse=reuse)
        for attempt in range(attempts + 1):
            run = await prepare_docker_run(environment, bases=(fixture,), eval_id="bench::attempt", attempt=attempt)
            start = time.perf_counter()
            sandbox = await DockerSandbox.create(fixture, run=run)
            if attempt:  # the first reused attempt starts the container, as a fresh one does
                times.append(time.perf_counter() - start)
            for index in range(10):  # what an attempt leaves for the next reset to undo
                await sandbox.write_text(f"pkg{index}/module{index}.py", "changed\n")
            await sandbox.write_text("added.py", "new\n")
            await sandbox.close()
        await close_reused()
    return statistics.median(fresh), statistics.median(reused)


async def _main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as folder:
        fixture = _fixture(Path(folder), args.files)
        sandboxed, bare, authored = await _per_command(fixture, args.image, args.commands)
        print(
            f"per command: run_command {sandboxed * 1000:.0f} ms, bare docker exec {bare * 1000:.0f} ms, "
            f"ratio {sandboxed / bare:.2f} (median of {args.commands})"
        )
        print(
            f"per eval command ({args.files} files): inside eval_writes() {authored * 1000:.0f} ms, alone "
            f"{sandboxed * 1000:.0f} ms, ratio {authored / sandboxed:.2f} (median of {args.commands})"
        )
        fresh, reused = await _per_attempt(fixture, args.image, args.attempts)
        print(
            f"per attempt ({args.files} files): fresh container {fresh * 1000:.0f} ms, reused {reused * 1000:.0f} "
            f"ms, ratio {fresh / reused:.1f} (median of {args.attempts})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=30)
    parser.add_argument("--attempts", type=int, default=10)
    parser.add_argument("--files", type=int, default=200, help="files in the fixture")
    parser.add_argument("--image", default="niceeval-base:bookworm")
    anyio.run(_main, parser.parse_args())


if __name__ == "__main__":
    main()
