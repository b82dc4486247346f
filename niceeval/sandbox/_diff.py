"""The workspace diff: what changed since the baseline, as path lists, contents and git-like text."""

from __future__ import annotations

import difflib
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Literal

from niceeval.sandbox._tree import LARGE_FILE_BYTES, FileState, decode_text, fingerprint_tree

ChangeStatus = Literal["added", "modified", "deleted"]
ChangeKind = Literal["text", "binary", "large", "symlink"]


@dataclass(frozen=True, kw_only=True)
class FileChange:
    """One path that differs from the baseline."""

    path: str
    """Path relative to the workspace root, with `/` separators."""
    status: ChangeStatus
    kind: ChangeKind
    """`text` when rendered as a unified diff; `binary`, `large` (over 256 KiB) and `symlink` changes
    are summarised in one line."""
    old_size: int | None
    """Size in bytes before the run (None when added); a symlink's size is its target's length."""
    new_size: int | None
    """Size in bytes after the run (None when deleted)."""
    content: str | None = field(default=None, repr=False)
    """The text after the run, for an added or modified `text` file; None otherwise."""
    old_content: str | None = field(default=None, repr=False)
    """The text before the run, for a modified or deleted `text` file; None otherwise."""


@dataclass(frozen=True, kw_only=True)
class Rename:
    """A file deleted at `old_path` whose exact content was added at `new_path`."""

    old_path: str
    new_path: str


@dataclass(frozen=True, kw_only=True)
class Diff:
    """What changed in the workspace since the baseline (the fixture as copied).

    A value: computed once by `Sandbox.diff()`, it stays valid after the sandbox is closed.

    Renames are detected by exact content hash (non-empty regular files only). They are listed in
    `renames` and rendered in `text` as git does (`rename from` / `rename to`), while the path lists
    stay literal: the old path is in `deleted`, the new one in `added`.
    """

    changes: tuple[FileChange, ...] = ()
    """Every changed path, sorted by path."""
    renames: tuple[Rename, ...] = ()
    text: str = ""
    """The unified diff, with git-like `diff --git a/x b/x`, `--- a/x` and `+++ b/x` headers."""

    def is_empty(self) -> bool:
        """True when no file was added, modified or deleted."""
        return not self.changes

    @property
    def changed_paths(self) -> list[str]:
        """All changed paths, sorted."""
        return [change.path for change in self.changes]

    @property
    def added(self) -> list[str]:
        """Paths that did not exist in the baseline, sorted."""
        return self._paths("added")

    @property
    def modified(self) -> list[str]:
        """Paths whose content (or symlink target) changed, sorted."""
        return self._paths("modified")

    @property
    def deleted(self) -> list[str]:
        """Baseline paths that no longer exist, sorted."""
        return self._paths("deleted")

    def change(self, path: str | PurePath) -> FileChange | None:
        """The change at `path` (relative to the workspace), or None if it did not change."""
        wanted = _normalise(path)
        return next((change for change in self.changes if change.path == wanted), None)

    def get(self, path: str | PurePath) -> str | None:
        """The text of `path` after the run, if it is an added or modified text file.

        Returns:
            The new contents; None if the path did not change, was deleted, or is binary, larger
            than 256 KiB or a symlink (read those with `Sandbox.read_text`).
        """
        change = self.change(path)
        return None if change is None else change.content

    def matches(self, pattern: str | re.Pattern[str]) -> bool:
        """True if `pattern` (searched with `re.search`) occurs in the unified diff `text`."""
        return re.search(pattern, self.text) is not None

    def _paths(self, status: ChangeStatus) -> list[str]:
        return [change.path for change in self.changes if change.status == status]


def _normalise(path: str | PurePath) -> str:
    return posixpath.normpath(PurePath(path).as_posix())


def compute_diff(baseline: Mapping[str, FileState], workspace: Path, *, ignore: Sequence[str]) -> Diff:
    """Fingerprint `workspace` now and compare it with `baseline` (blocking; run it in a thread)."""
    current = fingerprint_tree(workspace, ignore=ignore, keep_text=False)
    return diff_states(baseline, current, lambda path: _read_text(workspace / path))


def diff_states(
    before: Mapping[str, FileState], after: Mapping[str, FileState], read: Callable[[str], str | None]
) -> Diff:
    """Compare two fingerprints of a tree; `read(path)` gives the text of a changed text file on the `after` side.

    `before` must hold the text of its text files (fingerprinted with `keep_text=True`) for them to render as a
    unified diff; the others are summarised.
    """
    changed = [
        path for path in sorted(before.keys() | after.keys()) if not _unchanged(before.get(path), after.get(path))
    ]
    renames = _detect_renames(changed, before, after)
    rename_by_new_path = {rename.new_path: rename for rename in renames}
    renamed_old_paths = {rename.old_path for rename in renames}
    changes: list[FileChange] = []
    sections: list[str] = []
    for path in changed:
        old, new = before.get(path), after.get(path)
        change = _describe_change(path, old, new, read)
        changes.append(change)
        if path in rename_by_new_path:
            sections.append(_render_rename(rename_by_new_path[path]))
        elif path not in renamed_old_paths:
            sections.append(_render_change(change, old, new))
    return Diff(changes=tuple(changes), renames=renames, text="".join(sections))


def _unchanged(old: FileState | None, new: FileState | None) -> bool:
    return old is not None and new is not None and old.same_as(new)


def _detect_renames(
    changed: Sequence[str], baseline: Mapping[str, FileState], current: Mapping[str, FileState]
) -> tuple[Rename, ...]:
    # Empty files are left out: any two of them would "match".
    deleted_by_digest: dict[bytes, list[str]] = {}
    for path in changed:
        old = baseline.get(path)
        if old is not None and path not in current and old.kind == "file" and old.size > 0:
            deleted_by_digest.setdefault(old.digest, []).append(path)
    renames: list[Rename] = []
    for path in changed:
        new = current.get(path)
        if new is not None and path not in baseline and new.kind == "file" and new.size > 0:
            candidates = deleted_by_digest.get(new.digest)
            if candidates:
                renames.append(Rename(old_path=candidates.pop(0), new_path=path))
    return tuple(renames)


def _describe_change(
    path: str, old: FileState | None, new: FileState | None, read: Callable[[str], str | None]
) -> FileChange:
    status: ChangeStatus = "added" if old is None else "deleted" if new is None else "modified"
    states = [state for state in (old, new) if state is not None]
    kind: ChangeKind = "text"
    if any(state.kind == "symlink" for state in states):
        kind = "symlink"
    elif any(state.binary for state in states):
        kind = "binary"
    elif any(state.size > LARGE_FILE_BYTES for state in states):
        kind = "large"
    content = None
    if kind == "text" and new is not None:
        content = read(path)
        if content is None:  # changed again since it was fingerprinted; show it as it is now
            kind = "binary"
    return FileChange(
        path=path,
        status=status,
        kind=kind,
        old_size=None if old is None else old.size,
        new_size=None if new is None else new.size,
        content=content,
        old_content=old.text if kind == "text" and old is not None else None,
    )


def _read_text(path: Path) -> str | None:
    try:
        return decode_text(path.read_bytes())
    except OSError:
        return None


def _render_rename(rename: Rename) -> str:
    old, new = rename.old_path, rename.new_path
    return f"diff --git a/{old} b/{new}\nsimilarity index 100%\nrename from {old}\nrename to {new}\n"


def _render_change(change: FileChange, old: FileState | None, new: FileState | None) -> str:
    path = change.path
    header = f"diff --git a/{path} b/{path}\n"
    if change.kind != "text":
        return header + _summary(change, old, new) + "\n"
    if old is not None and old.text is None:
        return header + f"File {path} changed ({old.size} -> {change.new_size} bytes; baseline text not kept)\n"
    return header + _unified(path, None if old is None else old.text, change.content)


_SUMMARY_LABELS: dict[ChangeKind, str] = {"binary": "Binary file", "large": "Large file", "symlink": "Symlink"}


def _summary(change: FileChange, old: FileState | None, new: FileState | None) -> str:
    label = f"{_SUMMARY_LABELS[change.kind]} {change.path}"
    if old is None and new is not None:
        return f"{label} added ({_describe(new)})"
    if new is None and old is not None:
        return f"{label} deleted ({_describe(old)})"
    assert old is not None and new is not None
    if old.kind == new.kind == "file":
        return f"{label} changed ({old.size} -> {new.size} bytes)"
    return f"{label} changed ({_describe(old)} -> {_describe(new)})"


def _describe(state: FileState) -> str:
    return f"link to {state.link_target}" if state.kind == "symlink" else f"{state.size} bytes"


def _unified(path: str, old_text: str | None, new_text: str | None) -> str:
    lines: list[str] = []
    if old_text is None:
        lines.append("new file\n")
    if new_text is None:
        lines.append("deleted file\n")
    for line in difflib.unified_diff(
        _split_lines(old_text or ""),
        _split_lines(new_text or ""),
        fromfile="/dev/null" if old_text is None else f"a/{path}",
        tofile="/dev/null" if new_text is None else f"b/{path}",
    ):
        lines.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(lines)


def _split_lines(text: str) -> list[str]:
    # Only "\n" ends a line, as in git; str.splitlines would also split on \r, \f, \u2028 and others.
    pieces = text.split("\n")
    lines = [piece + "\n" for piece in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])
    return lines
