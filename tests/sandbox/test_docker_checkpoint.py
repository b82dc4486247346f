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


def test_reused_attempts_keep_seeing_read_only_folders_under_tmp(tmp_path: Path) -> None:
    """Mount points under `/tmp` live in the container's `/tmp`, a host folder a reset empties: it leaves them."""
    import anyio
    from docker_helpers import BASE_IMAGE, needs_docker

    from niceeval import EvalContext, define_eval
    from niceeval._core.results import RunResult
    from niceeval._run.discovery import EvalEntry
    from niceeval._run.execute import ExecOptions
    from niceeval._run.suite import SuiteOptions, run_suite
    from niceeval.expect import equals
    from niceeval.sandbox import docker_sandbox

    needs_docker()
    (tmp_path / "fixtures" / "app").mkdir(parents=True)
    (tmp_path / "fixtures" / "app" / "app.py").write_text("VALUE = 1\n")
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "tool.txt").write_text("a tool\n")
    environment = docker_sandbox(image=BASE_IMAGE, reuse=True, read_only=[tools])

    @define_eval(fixture="fixtures/app", sandbox=environment)
    async def sees_tools(t: EvalContext) -> None:
        seen = await t.sandbox.run_shell(f"cat {tools}/tool.txt; touch /tmp/left-behind")
        t.check(seen.stdout, equals("a tool\n"))

    finished: list[RunResult] = []

    class Collect:
        def start(self, plan: object, problems: object) -> None:
            pass

        def run_finished(self, result: RunResult) -> None:
            finished.append(result)

        def finish(self, summary: object) -> None:
            pass

    options = SuiteOptions(runs=3, concurrency=1, exec=ExecOptions(timeout=120, root=tmp_path))
    anyio.run(run_suite, [EvalEntry(id="x.py::sees_tools", spec=sees_tools)], [], options, [Collect()])
    assert [run.outcome for run in finished] == ["passed"] * 3, [run.error for run in finished]
    assert len({run.sandbox.container for run in finished if run.sandbox}) == 1
