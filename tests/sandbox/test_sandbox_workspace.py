"""LocalSandbox: copying the fixture, hiding files, paths kept inside the workspace, cleanup."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sandbox_helpers import write_tree

from niceeval.sandbox import LocalSandbox, SandboxPathError, SkippedPath

pytestmark = pytest.mark.anyio


async def test_fixture_files_are_copied_into_the_workspace(sandbox: LocalSandbox) -> None:
    assert await sandbox.read_text("src/app.py") == "def greet():\n    return 'hi'\n"
    assert await sandbox.read_text("README.md") == "# Demo\n"


async def test_workspace_is_a_fresh_directory_outside_the_fixture(sandbox: LocalSandbox, fixture_dir: Path) -> None:
    assert not sandbox.path.is_relative_to(fixture_dir)
    await sandbox.write_text("src/app.py", "changed\n")
    assert (fixture_dir / "src/app.py").read_text() == "def greet():\n    return 'hi'\n"


async def test_hidden_eval_file_is_not_in_the_workspace(sandbox: LocalSandbox) -> None:
    assert not (sandbox.path / "EVAL.py").exists()
    assert SkippedPath(path="EVAL.py", reason="hidden") in sandbox.skipped


async def test_hidden_name_pattern_hides_whole_directories(tmp_path: Path, anyio_backend: str) -> None:
    fixture = write_tree(tmp_path / "fx", {"secret/key.txt": "k", "src/main.py": ""})
    async with await LocalSandbox.create(fixture, hidden=["secret"], temp_dir=tmp_path) as sandbox:
        assert not await sandbox.exists("secret")
        assert await sandbox.exists("src/main.py")


async def test_symlink_pointing_outside_the_fixture_is_not_copied(tmp_path: Path, anyio_backend: str) -> None:
    outside = write_tree(tmp_path / "outside", {"secret.txt": "do not copy"})
    fixture = write_tree(tmp_path / "fx", {"a.txt": "a"})
    (fixture / "escape").symlink_to(Path("..") / "outside" / "secret.txt")
    (fixture / "absolute").symlink_to(outside / "secret.txt")
    async with await LocalSandbox.create(fixture, temp_dir=tmp_path) as sandbox:
        assert not os.path.lexists(sandbox.path / "escape")
        assert not os.path.lexists(sandbox.path / "absolute")
        assert {(s.path, s.reason) for s in sandbox.skipped} == {
            ("escape", "symlink outside fixture"),
            ("absolute", "absolute symlink"),
        }


async def test_relative_symlink_inside_the_fixture_is_copied_as_a_link(tmp_path: Path, anyio_backend: str) -> None:
    fixture = write_tree(tmp_path / "fx", {"src/real.txt": "real"})
    (fixture / "alias.txt").symlink_to("src/real.txt")
    async with await LocalSandbox.create(fixture, temp_dir=tmp_path) as sandbox:
        assert os.readlink(sandbox.path / "alias.txt") == "src/real.txt"
        assert await sandbox.read_text("alias.txt") == "real"


async def test_executable_bit_is_preserved(tmp_path: Path, anyio_backend: str) -> None:
    fixture = write_tree(tmp_path / "fx", {"run.sh": "#!/bin/sh\necho ran\n"})
    (fixture / "run.sh").chmod(0o755)
    async with await LocalSandbox.create(fixture, temp_dir=tmp_path) as sandbox:
        assert (await sandbox.run_command("./run.sh")).stdout == "ran\n"


async def test_write_text_creates_parent_directories(sandbox: LocalSandbox) -> None:
    await sandbox.write_text("new/deep/file.txt", "hello")
    assert await sandbox.read_text("new/deep/file.txt") == "hello"


async def test_exists_is_false_for_a_missing_file(sandbox: LocalSandbox) -> None:
    assert not await sandbox.exists("nope.txt")


async def test_path_leading_out_of_the_workspace_is_refused(sandbox: LocalSandbox) -> None:
    with pytest.raises(SandboxPathError, match="outside the sandbox workspace"):
        await sandbox.read_text("../home/.bashrc")


async def test_symlink_leading_out_of_the_workspace_is_refused(sandbox: LocalSandbox, tmp_path: Path) -> None:
    secret = write_tree(tmp_path / "elsewhere", {"secret.txt": "s"}) / "secret.txt"
    (sandbox.path / "link.txt").symlink_to(secret)
    with pytest.raises(SandboxPathError):
        await sandbox.read_text("link.txt")


async def test_missing_fixture_is_an_error(tmp_path: Path, anyio_backend: str) -> None:
    with pytest.raises(NotADirectoryError, match="is not a directory"):
        await LocalSandbox.create(tmp_path / "missing")


async def test_close_removes_the_sandbox_directory(sandbox: LocalSandbox) -> None:
    root = sandbox.path.parent
    assert await sandbox.close() is None
    assert not root.exists()


async def test_close_with_keep_leaves_the_workspace_and_returns_it(sandbox: LocalSandbox) -> None:
    await sandbox.write_text("notes.txt", "keep me")
    kept = await sandbox.close(keep=True)
    assert kept == sandbox.path
    assert (sandbox.path / "notes.txt").read_text() == "keep me"


async def test_close_removes_read_only_directories(sandbox: LocalSandbox) -> None:
    await sandbox.write_text("locked/file.txt", "x")
    (sandbox.path / "locked").chmod(0o500)
    root = sandbox.path.parent
    await sandbox.close()
    assert not root.exists()


async def test_closing_twice_returns_the_first_answer(sandbox: LocalSandbox) -> None:
    kept = await sandbox.close(keep=True)
    assert await sandbox.close() == kept


async def test_closed_sandbox_refuses_to_run_commands(sandbox: LocalSandbox) -> None:
    await sandbox.close()
    with pytest.raises(RuntimeError, match="is closed"):
        await sandbox.run_command("true")


async def test_async_with_closes_the_sandbox(fixture_dir: Path, tmp_path: Path, anyio_backend: str) -> None:
    async with await LocalSandbox.create(fixture_dir, temp_dir=tmp_path) as sandbox:
        root = sandbox.path.parent
    assert sandbox.closed
    assert not root.exists()
