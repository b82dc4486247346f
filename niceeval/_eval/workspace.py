"""Workspace assertions for sandbox evals: judged on the diff between the fixture and the final workspace."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from niceeval._core.assertion import Matcher, ScoreLike, Verdict
from niceeval._core.errors import UsageError
from niceeval._core.events import ActionCalledEvent, Event
from niceeval._diff import short

if TYPE_CHECKING:
    from niceeval.sandbox import Diff


def _changed(diff: Diff) -> str:
    return "changed paths: " + (", ".join(diff.changed_paths[:30]) or "none")


def _path_matcher(kind: str, path: str, pick: str) -> Matcher:
    if not isinstance(path, str) or not path:
        raise UsageError(f"{kind}() takes a workspace-relative path, e.g. {kind}('src/app.py').")
    wanted = path.removeprefix("./")

    def score(diff: Diff) -> ScoreLike:
        return True if wanted in getattr(diff, pick) else Verdict(False, _changed(diff))

    return Matcher(name=f"{kind}({wanted!r})", score_fn=score, expected=f"{wanted} {pick}")


def file_changed(path: str) -> Matcher:
    """The file existed in the fixture and was modified."""
    return _path_matcher("file_changed", path, "modified")


def file_added(path: str) -> Matcher:
    """The file did not exist in the fixture and was created."""
    return _path_matcher("file_added", path, "added")


def file_deleted(path: str) -> Matcher:
    """The file existed in the fixture and was deleted."""
    return _path_matcher("file_deleted", path, "deleted")


def not_in_diff(pattern: str | re.Pattern[str]) -> Matcher:
    """The unified diff does not match `pattern` (e.g. no secrets written)."""
    if not isinstance(pattern, str | re.Pattern):
        raise UsageError(f"not_in_diff() takes a string or a compiled regex, got {short(pattern)}.")
    regex = pattern if isinstance(pattern, re.Pattern) else re.compile(re.escape(pattern))

    def score(diff: Diff) -> ScoreLike:
        found = regex.search(diff.text)
        if found is None:
            return True
        line = diff.text[: found.start()].count("\n") + 1
        return Verdict(False, f"found at line {line} of the diff", actual=short(found.group()))

    return Matcher(name=f"not_in_diff(/{regex.pattern}/)", score_fn=score, expected="no match in the diff")


def no_failed_shell_commands() -> Matcher:
    """No shell command (sandbox command or agent-reported shell action) exited non-zero."""

    def score(events: Sequence[Event]) -> ScoreLike:
        failed = [e for e in events if isinstance(e, ActionCalledEvent) and e.kind == "shell" and e.status == "failed"]
        if not failed:
            return True
        listed = "; ".join(f"{short(e.input)} -> exit {e.exit_code}" for e in failed[:10])
        return Verdict(False, f"failed commands: {listed}", actual=f"{len(failed)} failed")

    return Matcher(name="no_failed_shell_commands", score_fn=score, expected="every shell command exits 0")
