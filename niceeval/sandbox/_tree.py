"""Copying a fixture into a workspace and fingerprinting a workspace, never following symlinks.

Both walk the tree with `os.scandir` and treat a symlink as a link (its target text), so neither
reads nor copies anything a link points to outside the tree.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Literal

LARGE_FILE_BYTES = 256 * 1024
"""Files bigger than this are fingerprinted but never rendered into a diff."""

BASELINE_TEXT_BUDGET = 64 * 1024 * 1024
"""Most bytes of fixture text kept in memory to render diffs against; files past it are summarised."""

_BINARY_SNIFF_BYTES = 8000  # git's heuristic: a NUL byte among the first 8000 bytes means binary
_HASH_CHUNK_BYTES = 1024 * 1024

SkipReason = Literal["hidden", "symlink outside fixture", "absolute symlink", "special file"]


@dataclass(frozen=True, kw_only=True)
class SkippedPath:
    """A fixture entry that was not copied into the workspace, and why."""

    path: str
    """Path relative to the fixture root, with `/` separators."""
    reason: SkipReason
    """`hidden` (matched a hidden pattern), a symlink that would lead out of the workspace, or a
    fifo, socket or device."""


@dataclass(frozen=True, kw_only=True, slots=True)
class FileState:
    """What one workspace entry looked like when fingerprinted."""

    kind: Literal["file", "symlink"]
    digest: bytes
    """SHA-256 of the content (of the target text, for a symlink)."""
    size: int
    binary: bool
    link_target: str | None = None
    text: str | None = None
    """The content itself, kept only for baseline text files (to render diffs against)."""

    def same_as(self, other: FileState) -> bool:
        """True when both are the same kind of entry with the same content."""
        return self.kind == other.kind and self.digest == other.digest


def path_matches(rel: str, patterns: Sequence[str]) -> bool:
    """True if `rel` matches a pattern: without `/` against its name, with `/` against the whole path."""
    name = rel.rsplit("/", 1)[-1]
    return any(fnmatchcase(rel if "/" in pattern else name, pattern.strip("/")) for pattern in patterns)


def _walk(root: Path, exclude: Sequence[str]) -> Iterator[tuple[str, os.DirEntry[str], bool]]:
    """Yield `(relative path, entry, excluded)` for everything under `root`, parents before children.

    Excluded directories and symlinks to directories are yielded but not descended into.
    """
    pending = [("", str(root))]
    while pending:
        prefix, directory = pending.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                rel = prefix + entry.name
                excluded = path_matches(rel, exclude)
                yield rel, entry, excluded
                if not excluded and entry.is_dir(follow_symlinks=False):
                    pending.append((rel + "/", entry.path))


def copy_fixture(fixture: Path, workspace: Path, *, hidden: Sequence[str]) -> list[SkippedPath]:
    """Copy `fixture` into the existing, empty `workspace` and return what was left out."""
    root = fixture.resolve(strict=True)
    skipped: list[SkippedPath] = []
    for rel, entry, excluded in _walk(root, hidden):
        target = workspace / rel
        if excluded:
            skipped.append(SkippedPath(path=rel, reason="hidden"))
        elif entry.is_symlink():
            reason = _copy_symlink(root, rel, target)
            if reason is not None:
                skipped.append(SkippedPath(path=rel, reason=reason))
        elif entry.is_dir(follow_symlinks=False):
            target.mkdir()
        elif entry.is_file(follow_symlinks=False):
            # copy2 keeps the mode bits, so fixture scripts stay executable.
            shutil.copy2(entry.path, target, follow_symlinks=False)
        else:
            skipped.append(SkippedPath(path=rel, reason="special file"))
    return skipped


def _copy_symlink(root: Path, rel: str, target: Path) -> SkipReason | None:
    """Recreate the link at `rel` if it stays inside the fixture; otherwise say why it was skipped."""
    destination = os.readlink(root / rel)
    if os.path.isabs(destination):
        # Even one pointing into the fixture would lead out of the workspace, back to the fixture.
        return "absolute symlink"
    # Checked both as written (the copy resolves it from the workspace) and as it resolves now
    # (a chain of links may leave the fixture even when the text does not).
    lexical = posixpath.normpath(posixpath.join(posixpath.dirname(rel), destination))
    resolved = (root / rel).parent.joinpath(destination).resolve()
    if lexical == ".." or lexical.startswith("../") or not resolved.is_relative_to(root):
        return "symlink outside fixture"
    os.symlink(destination, target)
    return None


def fingerprint_tree(root: Path, *, ignore: Sequence[str], keep_text: bool) -> dict[str, FileState]:
    """Fingerprint every file and symlink under `root`, skipping paths that match `ignore`.

    Args:
        root: The directory to walk.
        ignore: Patterns (see `path_matches`) of paths that are not tracked.
        keep_text: Keep the text of small text files, until about `BASELINE_TEXT_BUDGET` bytes are kept.
    """
    states: dict[str, FileState] = {}
    budget = BASELINE_TEXT_BUDGET if keep_text else 0
    for rel, entry, excluded in _walk(root, ignore):
        if excluded:
            continue
        if entry.is_symlink():
            destination = os.readlink(entry.path)
            encoded = os.fsencode(destination)
            states[rel] = FileState(
                kind="symlink",
                digest=hashlib.sha256(encoded).digest(),
                size=len(encoded),
                binary=False,
                link_target=destination,
            )
        elif entry.is_file(follow_symlinks=False):
            state = fingerprint_file(Path(entry.path), keep_text=budget > 0)
            if state.text is not None:
                budget -= state.size
            states[rel] = state
    return states


def fingerprint_file(path: Path, *, keep_text: bool) -> FileState:
    """Hash one regular file, deciding whether it is binary; keep its text if asked and small."""
    with path.open("rb") as stream:
        head = stream.read(LARGE_FILE_BYTES + 1)
        digest = hashlib.sha256(head)
        size = len(head)
        if size > LARGE_FILE_BYTES:
            # Too large to diff: stream the rest through the hash without holding it.
            while chunk := stream.read(_HASH_CHUNK_BYTES):
                digest.update(chunk)
                size += len(chunk)
            return FileState(kind="file", digest=digest.digest(), size=size, binary=_has_nul(head))
    text = decode_text(head)
    return FileState(
        kind="file",
        digest=digest.digest(),
        size=size,
        binary=text is None,
        text=text if keep_text else None,
    )


def decode_text(data: bytes) -> str | None:
    """The UTF-8 text of `data`, or None if it looks binary."""
    if _has_nul(data):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _has_nul(data: bytes) -> bool:
    return b"\0" in data[:_BINARY_SNIFF_BYTES]
