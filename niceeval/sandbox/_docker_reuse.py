"""The containers of a Docker sandbox and the host folder they mount (a `Box`), and the boxes kept for reuse.

`docker_sandbox(reuse=True)` keeps one box per eval (and image, and declaration) across its attempts: the next
attempt waits for the previous one to close, then gets the same containers and services, with the sandbox folder
reset to the fixture (the checkpoint: fixture setup's output, copied again) and HOME, TMPDIR and the container's
`/tmp` emptied. The container's file system is read-only but for those bind-mounted host folders, so the reset is
done on the host, without a command in the container. Bind mounts hold on to a folder's inode, so a reset empties
the mounted folders in place instead of replacing them; in the container's `/tmp` it keeps the folder holding their
mount points, when the sandbox folder is itself under `/tmp`. The boxes are removed when the suite ends
(`close_reused`), or at exit.
"""

from __future__ import annotations

import atexit
import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from niceeval.sandbox._bwrap import EndpointForwarder
from niceeval.sandbox._docker_checkpoint import CHECKPOINT, Checkpoint, restore
from niceeval.sandbox._docker_cli import docker, docker_argv
from niceeval.sandbox._docker_pod import Pod

KEPT_PREFIX = "niceeval-kept-"
"""How a kept workspace container is renamed (its labels cannot change): no later run takes it for one a crash left."""
CONTAINER_TMP = "container-tmp"
"""The host folder mounted as the container's `/tmp`."""
KEPT_ACROSS_RESETS = ("net", "lifeline", "workspace", CHECKPOINT)
"""Entries of the sandbox folder a reset does not empty: the endpoints' sockets, the commands' lifeline FIFO, and the
workspace, restored from the checkpoint instead."""


@dataclass(kw_only=True)
class Box:
    """A started pod, the host folder it mounts, and the relays running in it."""

    root: Path
    pod: Pod
    forwarder: EndpointForwarder
    kept_in_tmp: frozenset[Path] = frozenset()
    """The entries of the container's `/tmp` (on the host) holding mount points: a reset leaves them."""
    checkpoint: Checkpoint | None = None
    """With `reuse=True`: the workspace as the first attempt found it, which the next ones start from."""
    relays: dict[str, anyio.Lock] = field(default_factory=dict)
    attempts: list[int] = field(default_factory=list)
    """The attempts that used it, in order."""
    keep: bool = False
    """An attempt asked to keep it (`--keep-sandbox`): when the suite ends it is kept, not removed."""

    async def remove(self) -> None:
        """Stop forwarding and remove the containers (the folder goes with its sandbox)."""
        self.forwarder.close()
        await self.pod.remove()

    async def keep_for_later(self) -> None:
        """Stop forwarding and leave the containers running, named as kept (`niceeval sandbox list`)."""
        self.forwarder.close()
        await docker("rename", self.pod.workspace, KEPT_PREFIX + self.pod.workspace[:12])


async def reset_box(box: Box) -> None:
    """Make the box as the previous attempt found it: the workspace restored from the checkpoint, HOME, TMPDIR and
    the container's `/tmp` emptied."""
    assert box.checkpoint is not None, "a box kept for reuse has its checkpoint"
    await anyio.to_thread.run_sync(_reset_root, box.root, box.kept_in_tmp)
    await anyio.to_thread.run_sync(restore, box.checkpoint, box.root / "workspace")


def _reset_root(root: Path, kept_in_tmp: frozenset[Path]) -> None:
    """Empty the sandbox folder for the next attempt, keeping the mounted folders themselves (and `net`), and in
    the container's `/tmp` the folders holding mount points."""
    for entry in root.iterdir():
        if entry.name in KEPT_ACROSS_RESETS:
            continue
        if entry.is_dir() and not entry.is_symlink():
            for inner in entry.iterdir():
                if inner not in kept_in_tmp:
                    _remove(inner)
        else:
            entry.unlink()


def mount_points_in_tmp(root: Path, mounted: Sequence[Path]) -> dict[Path, Path]:
    """For each of the container's mounts under `/tmp`, where its mount point lies in the host folder mounted as
    the container's `/tmp` (`<root>/container-tmp/...`)."""
    tmp = Path("/tmp")
    under = [path for path in mounted if path.is_relative_to(tmp) and path != tmp]
    return {path: root / CONTAINER_TMP / path.relative_to(tmp) for path in under}


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, onerror=_writable_then_retry)
    else:
        path.unlink()


def _writable_then_retry(function: Callable[..., Any], path: str, _: object) -> None:
    """An agent may leave read-only folders behind: make the parent writable and try again."""
    parent = os.path.dirname(path)
    os.chmod(parent, stat.S_IRWXU)
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, stat.S_IRWXU)
    function(path)


class ReusePool:
    """The boxes kept across attempts, one per key; an attempt holds its key's turn from `take` to `give_back`."""

    def __init__(self) -> None:
        self._boxes: dict[str, Box] = {}
        self._turns: dict[str, anyio.Semaphore] = {}
        atexit.register(self._remove_at_exit)

    async def take(self, key: str) -> Box | None:
        """Wait for the key's turn; the box the previous attempt left, if any."""
        await self._turns.setdefault(key, anyio.Semaphore(1)).acquire()
        return self._boxes.get(key)

    def give_back(self, key: str, box: Box | None) -> None:
        """End this attempt's turn, leaving `box` to the next one (None: the box is gone, the next starts anew)."""
        if box is None:
            self._boxes.pop(key, None)
        else:
            self._boxes[key] = box
        self._turns[key].release()

    async def close(self) -> None:
        """Remove every kept box's containers and folder."""
        boxes, self._boxes, self._turns = list(self._boxes.values()), {}, {}
        with anyio.CancelScope(shield=True):
            for box in boxes:
                if box.keep:
                    await box.keep_for_later()
                else:
                    await box.remove()
                    await anyio.to_thread.run_sync(remove_folder, box.root)

    def _remove_at_exit(self) -> None:
        for box in (box for box in self._boxes.values() if not box.keep):
            subprocess.run(docker_argv("rm", "--force", *box.pod.containers), capture_output=True, check=False)
            remove_folder(box.root)


def remove_folder(root: Path) -> None:
    """Remove a sandbox folder, also what an agent made read-only."""
    shutil.rmtree(root, onerror=_writable_then_retry)


REUSED = ReusePool()
"""This process's reused boxes."""


async def close_reused() -> None:
    """Remove the containers kept for reuse across attempts (the suite calls it when it ends)."""
    await REUSED.close()
