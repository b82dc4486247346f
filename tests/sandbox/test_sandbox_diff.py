"""Sandbox.diff(): changes against the baseline, as path lists, contents and git-like text."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sandbox_helpers import write_tree

from niceeval.sandbox import LARGE_FILE_BYTES, FileChange, LocalSandbox, Rename

pytestmark = pytest.mark.anyio


async def test_untouched_workspace_has_an_empty_diff(sandbox: LocalSandbox) -> None:
    diff = await sandbox.diff()
    assert diff.is_empty()
    assert diff.text == ""


async def test_added_file_is_listed_and_its_contents_are_available(sandbox: LocalSandbox) -> None:
    await sandbox.write_text("src/new.py", "x = 1\n")
    diff = await sandbox.diff()
    assert diff.added == ["src/new.py"]
    assert diff.get("src/new.py") == "x = 1\n"
    assert "--- /dev/null\n+++ b/src/new.py\n@@ -0,0 +1 @@\n+x = 1\n" in diff.text


async def test_modified_file_is_shown_as_a_unified_diff_with_git_headers(sandbox: LocalSandbox) -> None:
    await sandbox.write_text("src/app.py", "def greet():\n    return 'hello'\n")
    diff = await sandbox.diff()
    assert diff.modified == ["src/app.py"]
    assert diff.text == (
        "diff --git a/src/app.py b/src/app.py\n"
        "--- a/src/app.py\n"
        "+++ b/src/app.py\n"
        "@@ -1,2 +1,2 @@\n"
        " def greet():\n"
        "-    return 'hi'\n"
        "+    return 'hello'\n"
    )


async def test_get_returns_the_post_change_contents(sandbox: LocalSandbox) -> None:
    await sandbox.write_text("src/app.py", "def greet():\n    return 'hello'\n")
    assert (await sandbox.diff()).get("src/app.py") == "def greet():\n    return 'hello'\n"


async def test_get_returns_none_for_an_unchanged_file(sandbox: LocalSandbox) -> None:
    await sandbox.write_text("other.txt", "x")
    assert (await sandbox.diff()).get("README.md") is None


async def test_deleted_file_is_listed_and_has_no_contents(sandbox: LocalSandbox) -> None:
    (sandbox.path / "README.md").unlink()
    diff = await sandbox.diff()
    assert diff.deleted == ["README.md"]
    assert diff.get("README.md") is None
    assert "--- a/README.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-# Demo\n" in diff.text


async def test_changed_paths_are_sorted_across_kinds_of_change(sandbox: LocalSandbox) -> None:
    await sandbox.write_text("zeta.txt", "z")
    await sandbox.write_text("alpha.txt", "a")
    (sandbox.path / "README.md").unlink()
    await sandbox.write_text("src/app.py", "changed\n")
    assert (await sandbox.diff()).changed_paths == ["README.md", "alpha.txt", "src/app.py", "zeta.txt"]


async def test_missing_final_newline_is_marked_as_git_does(sandbox: LocalSandbox) -> None:
    await sandbox.write_text("README.md", "# Demo")
    assert "+# Demo\n\\ No newline at end of file\n" in (await sandbox.diff()).text


async def test_binary_change_is_summarised_in_one_line(tmp_path: Path, anyio_backend: str) -> None:
    fixture = write_tree(tmp_path / "fx", {"logo.png": b"\x89PNG\0" + b"a" * 1229})
    async with await LocalSandbox.create(fixture, temp_dir=tmp_path) as sandbox:
        (sandbox.path / "logo.png").write_bytes(b"\x89PNG\0" + b"b" * 5673)
        diff = await sandbox.diff()
    assert diff.text == "diff --git a/logo.png b/logo.png\nBinary file logo.png changed (1234 -> 5678 bytes)\n"
    assert diff.get("logo.png") is None


async def test_added_binary_file_is_summarised_and_not_dumped(sandbox: LocalSandbox) -> None:
    (sandbox.path / "data.bin").write_bytes(b"\0\1\2secret")
    diff = await sandbox.diff()
    assert "Binary file data.bin added (9 bytes)" in diff.text
    assert "secret" not in diff.text


async def test_large_text_file_change_is_summarised_not_dumped(sandbox: LocalSandbox) -> None:
    big = "line\n" * (LARGE_FILE_BYTES // 5 + 10)
    await sandbox.write_text("big.log", big)
    diff = await sandbox.diff()
    assert diff.change("big.log") == FileChange(
        path="big.log", status="added", kind="large", old_size=None, new_size=len(big)
    )
    assert diff.text == f"diff --git a/big.log b/big.log\nLarge file big.log added ({len(big)} bytes)\n"


async def test_rename_is_detected_by_content_hash(sandbox: LocalSandbox) -> None:
    (sandbox.path / "src/app.py").rename(sandbox.path / "src/main.py")
    diff = await sandbox.diff()
    assert diff.renames == (Rename(old_path="src/app.py", new_path="src/main.py"),)
    assert "rename from src/app.py\nrename to src/main.py\n" in diff.text


async def test_renamed_paths_stay_in_the_added_and_deleted_lists(sandbox: LocalSandbox) -> None:
    (sandbox.path / "src/app.py").rename(sandbox.path / "src/main.py")
    diff = await sandbox.diff()
    assert (diff.added, diff.deleted) == (["src/main.py"], ["src/app.py"])


async def test_symlink_pointing_outside_is_not_followed_when_diffing(sandbox: LocalSandbox, tmp_path: Path) -> None:
    secret = write_tree(tmp_path / "elsewhere", {"secret.txt": "sk-live-123"}) / "secret.txt"
    os.symlink(secret, sandbox.path / "leak.txt")
    diff = await sandbox.diff()
    assert diff.text == f"diff --git a/leak.txt b/leak.txt\nSymlink leak.txt added (link to {secret})\n"
    assert diff.get("leak.txt") is None


async def test_matches_searches_the_diff_text(sandbox: LocalSandbox) -> None:
    await sandbox.write_text("config.py", "API_KEY = 'sk-abc123'\n")
    diff = await sandbox.diff()
    assert diff.matches(r"sk-[A-Za-z0-9]+")
    assert not diff.matches(r"ghp_[A-Za-z0-9]+")


async def test_cache_directories_are_not_in_the_diff(sandbox: LocalSandbox) -> None:
    (sandbox.path / "src/__pycache__").mkdir()
    (sandbox.path / "src/__pycache__/app.cpython-311.pyc").write_bytes(b"\0pyc")
    assert (await sandbox.diff()).is_empty()


async def test_diff_stays_usable_after_the_sandbox_is_closed(sandbox: LocalSandbox) -> None:
    await sandbox.write_text("src/new.py", "x = 1\n")
    diff = await sandbox.diff()
    await sandbox.close()
    assert diff.get("src/new.py") == "x = 1\n"
