"""Copying a fixture into a workspace and fingerprinting a workspace, never following symlinks.

Both walk the tree with `os.scandir` and treat a symlink as a link (its target text), so neither
reads nor copies anything a link points to outside the tree.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
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


StatKey = tuple[int, int, int, int]
"""What a file's `lstat` says of its content: inode, size, modification and change times (ns)."""
_SETTLE_NS = 100_000_000
"""A file changed this close before a walk began may change again within the file system's clock tick without its
times moving: it is hashed again next time rather than trusted."""


@dataclass(kw_only=True)
class StatCache:
    """File states from the last walk of one tree, reused by the next walk for files whose `lstat` is unchanged.

    A change to a file's content moves its change time (`ctime`, which no user can set back), so an unchanged
    inode, size, mtime and ctime means unchanged content, once the file had settled before the walk that read it.
    """

    entries: dict[str, tuple[StatKey, int, FileState]] = field(default_factory=dict)
    """Path -> (its lstat key, the walk's settle line in ns, its state)."""

    def known(self, rel: str, key: StatKey, keep_text: bool) -> FileState | None:
        found = self.entries.get(rel)
        if found is None or found[0] != key or key[3] >= found[1]:
            return None
        state = found[2]
        text_missing = keep_text and state.text is None and not state.binary and state.size <= LARGE_FILE_BYTES
        return None if text_missing else state


def fingerprint_tree(
    root: Path, *, ignore: Sequence[str], keep_text: bool, cache: StatCache | None = None
) -> dict[str, FileState]:
    """Fingerprint every file and symlink under `root`, skipping paths that match `ignore`.

    Args:
        root: The directory to walk.
        ignore: Patterns (see `path_matches`) of paths that are not tracked.
        keep_text: Keep the text of small text files, until about `BASELINE_TEXT_BUDGET` bytes are kept.
        cache: The states of the last walk of this tree: files whose `lstat` did not change are not read again
            (the cache is updated to this walk).
    """
    states: dict[str, FileState] = {}
    settle_line = time.time_ns() - _SETTLE_NS
    seen: dict[str, tuple[StatKey, int, FileState]] = {}
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
            info = entry.stat(follow_symlinks=False)
            key = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
            known = None if cache is None else cache.known(rel, key, keep_text=budget > 0)
            state = known or fingerprint_file(Path(entry.path), keep_text=budget > 0)
            if state.text is not None:
                budget -= state.size
            states[rel] = state
            seen[rel] = (key, settle_line, state)
    if cache is not None:
        cache.entries = seen
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
