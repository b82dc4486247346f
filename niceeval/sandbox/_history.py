"""Who changed what in a workspace: snapshots taken around a stretch of the run, and the diff of some stretches.

A `Snapshot` is a fingerprint of the workspace with the text of its text files, so the diff between two of them can
be rendered later, after the workspace moved on. The sandbox takes one before and after each of the eval's own
writes through `t.sandbox` (`Authorship`), and the conversation one before and after each turn; the diff of several
stretches shows, for every path one of them changed, the file as the first of them found it and as the last of them
left it. The agent's stretches are the rest of the run: from the baseline to the eval's first write, between the
eval's writes, and from its last write to now.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from niceeval.sandbox._diff import Diff, diff_states
from niceeval.sandbox._tree import FileState

Snapshot = Mapping[str, FileState]
"""A workspace fingerprinted with its text kept (path -> state)."""
Author = Literal["agent", "eval"]
"""Whose changes a diff shows: the eval's own writes through `t.sandbox`, or everything else (the agent's)."""
AUTHORS: tuple[Author, ...] = ("agent", "eval")


@dataclass(frozen=True, kw_only=True)
class Stretch:
    """The workspace before and after a stretch of the run (a turn, one of the eval's writes)."""

    before: Snapshot
    after: Snapshot


def stretches_diff(stretches: Sequence[Stretch]) -> Diff:
    """The changes of `stretches` (in order): per path any of them changed, first found -> last left."""
    first: dict[str, FileState | None] = {}
    last: dict[str, FileState | None] = {}
    for stretch in stretches:
        for path in _changed(stretch.before, stretch.after):
            first.setdefault(path, stretch.before.get(path))
            last[path] = stretch.after.get(path)
    before = {path: state for path, state in first.items() if state is not None}
    after = {path: state for path, state in last.items() if state is not None}
    return diff_states(before, after, lambda path: after[path].text)


def _changed(before: Snapshot, after: Snapshot) -> list[str]:
    return [
        path
        for path in before.keys() | after.keys()
        if (old := before.get(path)) is None or (new := after.get(path)) is None or not old.same_as(new)
    ]


class Authorship:
    """The eval's writes through `t.sandbox` in one workspace, as stretches; the agent's are the gaps between."""

    def __init__(self, baseline: Snapshot) -> None:
        self._baseline = baseline
        self._eval: list[Stretch] = []

    def eval_wrote(self, stretch: Stretch) -> None:
        """Record one of the eval's writes (a `t.sandbox` call), from the snapshots taken around it."""
        self._eval.append(stretch)

    def stretches(self, author: Author, now: Snapshot) -> list[Stretch]:
        """The stretches of the run `author` changed the workspace in, up to `now`."""
        if author == "eval":
            return list(self._eval)
        edges = [self._baseline]
        for stretch in self._eval:
            edges += [stretch.before, stretch.after]
        edges.append(now)
        return [Stretch(before=edges[i], after=edges[i + 1]) for i in range(0, len(edges), 2)]
