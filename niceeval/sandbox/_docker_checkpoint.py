"""The checkpoint of a reused Docker sandbox: its workspace as setup left it, restored between attempts.

The first attempt copies its fresh workspace (the fixture with setup's output) to `checkpoint/` in the sandbox
folder, which no container mounts, and remembers each file's `lstat` there and then. A later attempt restores the
workspace in place (bind mounts hold the folder's inode) by touching only what differs: what the checkpoint does
not hold is removed, a file whose `lstat` moved (a write sets its modification time to now, while the copies keep
the checkpoint's; `ctime` catches a time set back) is copied again, and so are links and modes that changed. The
attempt's baseline is the checkpoint's, not fingerprinted again: the workspace holds the same files.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from niceeval.sandbox._tree import StatKey
from niceeval.sandbox._workspace import Prepared

CHECKPOINT = "checkpoint"
"""The folder of the sandbox folder holding the checkpoint."""


@dataclass(kw_only=True)
class Checkpoint:
    """The workspace as the first attempt found it, and what the restored workspace's files look like."""

    folder: Path
    prepared: Prepared
    """Its baseline and what the copy of the fixture left out: the next attempt's, as they are."""
    keys: dict[str, StatKey] = field(default_factory=dict)
    """The `lstat` of every file of the workspace right after it was last copied or restored."""


def take_checkpoint(workspace: Path, root: Path, prepared: Prepared) -> Checkpoint:
    """Copy the fresh `workspace` into `root/checkpoint` (blocking: run it in a thread)."""
    folder = root / CHECKPOINT
    shutil.copytree(workspace, folder, symlinks=True)
    return Checkpoint(folder=folder, prepared=prepared, keys=_file_keys(workspace))


def restore(checkpoint: Checkpoint, workspace: Path) -> None:
    """Make `workspace` hold exactly what the checkpoint holds, copying only what differs (blocking)."""
    _prune(workspace, checkpoint.folder, "", checkpoint.keys)
    _fill(workspace, checkpoint.folder)
    checkpoint.keys = _file_keys(workspace)


def _prune(folder: Path, kept: Path, prefix: str, keys: Mapping[str, StatKey]) -> None:
    """Remove from `folder` every entry that differs from its counterpart in `kept` (the checkpoint)."""
    mode = os.lstat(folder).st_mode
    if stat.S_IMODE(mode) & stat.S_IRWXU != stat.S_IRWXU:
        os.chmod(folder, stat.S_IMODE(mode) | stat.S_IRWXU)  # an agent may leave a folder read-only
    with os.scandir(folder) as entries:
        listed = list(entries)
    for entry in listed:
        rel = prefix + entry.name
        try:
            wanted: os.stat_result | None = os.lstat(kept / entry.name)
        except FileNotFoundError:
            wanted = None
        if entry.is_dir(follow_symlinks=False):
            if wanted is not None and stat.S_ISDIR(wanted.st_mode):
                _prune(Path(entry.path), kept / entry.name, rel + "/", keys)
            else:
                _remove(Path(entry.path))
        elif not _same(entry, wanted, kept / entry.name, keys.get(rel)):
            os.unlink(entry.path)
    wanted_mode = stat.S_IMODE(os.lstat(kept).st_mode)
    if stat.S_IMODE(os.lstat(folder).st_mode) != wanted_mode:
        os.chmod(folder, wanted_mode)


def _same(entry: os.DirEntry[str], wanted: os.stat_result | None, kept: Path, key: StatKey | None) -> bool:
    if wanted is None:
        return False
    if entry.is_symlink():
        return stat.S_ISLNK(wanted.st_mode) and os.readlink(entry.path) == os.readlink(kept)
    if entry.is_file(follow_symlinks=False):
        return stat.S_ISREG(wanted.st_mode) and key is not None and key == _key(entry.stat(follow_symlinks=False))
    return False  # a fifo or socket the agent made


def _fill(folder: Path, kept: Path) -> None:
    """Copy into `folder` every entry of `kept` it lacks."""
    with os.scandir(kept) as entries:
        listed = list(entries)
    for entry in listed:
        target = folder / entry.name
        if entry.is_dir(follow_symlinks=False):
            if target.is_dir() and not target.is_symlink():
                _fill(target, Path(entry.path))
            else:
                shutil.copytree(entry.path, target, symlinks=True)
        elif not os.path.lexists(target):
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), target)
            else:
                shutil.copy2(entry.path, target, follow_symlinks=False)


def _remove(path: Path) -> None:
    shutil.rmtree(path, onerror=_writable_then_retry)


def _writable_then_retry(function: Callable[..., Any], path: str, _: object) -> None:
    """An agent may leave read-only folders behind: make the parent (and the folder) writable and try again."""
    os.chmod(os.path.dirname(path), stat.S_IRWXU)
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, stat.S_IRWXU)
    function(path)


def _file_keys(root: Path) -> dict[str, StatKey]:
    keys: dict[str, StatKey] = {}
    pending = [("", root)]
    while pending:
        prefix, folder = pending.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append((prefix + entry.name + "/", Path(entry.path)))
                elif entry.is_file(follow_symlinks=False):
                    keys[prefix + entry.name] = _key(entry.stat(follow_symlinks=False))
    return keys


def _key(info: os.stat_result) -> StatKey:
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
