"""A reused Docker sandbox's checkpoint: the workspace restored between attempts to exactly what setup left, touching
only what differs (what an attempt wrote, removed, renamed, relinked or chmodded), untouched files kept in place."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from niceeval.sandbox._docker_checkpoint import restore, take_checkpoint
from niceeval.sandbox._tree import fingerprint_tree
from niceeval.sandbox._workspace import Prepared


def tree(root: Path) -> dict[str, tuple[str, str]]:
    """Every entry under `root`: its kind and content (a file's text, a link's target, a folder's mode)."""
    found: dict[str, tuple[str, str]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            found[rel] = ("link", os.readlink(path))
        elif stat.S_ISDIR(info.st_mode):
            found[rel] = ("dir", oct(stat.S_IMODE(info.st_mode)))
        else:
            found[rel] = ("file", path.read_text() + oct(stat.S_IMODE(info.st_mode)))
    return found


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    (folder / "src").mkdir(parents=True)
    (folder / "node_modules" / "dep").mkdir(parents=True)
    (folder / "app.py").write_text("VALUE = 1\n")
    (folder / "src" / "lib.py").write_text("def f():\n    return 1\n")
    (folder / "src" / "gone.py").write_text("soon removed\n")
    (folder / "node_modules" / "dep" / "index.js").write_text("module.exports = 1\n")
    (folder / "link").symlink_to("app.py")
    return folder


def test_every_kind_of_change_is_undone_and_unchanged_files_stay_in_place(tmp_path: Path, workspace: Path) -> None:
    baseline = fingerprint_tree(workspace, ignore=(), keep_text=True)
    checkpoint = take_checkpoint(workspace, tmp_path, Prepared(baseline=baseline, skipped=()))
    expected = tree(workspace)

    (workspace / "app.py").write_text("VALUE = 2\n")  # same size, rewritten in place
    (workspace / "src" / "gone.py").unlink()
    (workspace / "new.py").write_text("added\n")
    (workspace / "node_modules" / "dep" / "index.js").write_text("tampered\n")  # not tracked by diffs; restored
    (workspace / "link").unlink()
    (workspace / "link").symlink_to("/etc/passwd")
    (workspace / "src" / "lib.py").chmod(0o755)
    (workspace / "src" / "lib.py").chmod(0o644)  # mode back, ctime moved: copied again all the same
    locked = workspace / "locked"
    locked.mkdir()
    (locked / "inside.txt").write_text("x\n")
    locked.chmod(0o500)
    (workspace / "src").chmod(0o700)
    os.mkfifo(workspace / "fifo")

    restore(checkpoint, workspace)
    assert tree(workspace) == expected

    kept = workspace / "app.py"
    before = os.lstat(kept)
    restore(checkpoint, workspace)  # nothing changed: nothing is copied
    assert os.lstat(kept).st_ino == before.st_ino and tree(workspace) == expected


def test_a_rewrite_with_its_times_set_back_is_undone(tmp_path: Path, workspace: Path) -> None:
    checkpoint = take_checkpoint(workspace, tmp_path, Prepared(baseline={}, skipped=()))
    target = workspace / "app.py"
    info = os.lstat(target)
    target.write_text("VALUE = 9\n")
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
    restore(checkpoint, workspace)
    assert target.read_text() == "VALUE = 1\n"


def test_the_checkpoint_lives_outside_the_workspace(tmp_path: Path, workspace: Path) -> None:
    checkpoint = take_checkpoint(workspace, tmp_path, Prepared(baseline={}, skipped=()))
    assert checkpoint.folder == tmp_path / "checkpoint" and not checkpoint.folder.is_relative_to(workspace)
    assert (checkpoint.folder / "app.py").read_text() == "VALUE = 1\n"
