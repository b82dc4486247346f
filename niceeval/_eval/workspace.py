"""Workspace assertions for sandbox evals: judged on the diff between the fixture and the final workspace."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from niceeval._core.assertion import Matcher, ScoreLike, Verdict
from niceeval._core.errors import UsageError
from niceeval._core.events import ActionCalledEvent, Event
from niceeval._core.values import short

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


ContentSpec = str | re.Pattern[str] | Matcher
"""What a file's text must be: exactly this string, a regex searched in it, or a matcher applied to it."""


def _content_misses(which: str, spec: ContentSpec | None, text: str | None) -> str | None:
    if spec is None:
        return None
    if text is None:
        return f"{which}: no text to compare (a binary, large or symlinked file)"
    if isinstance(spec, re.Pattern):
        return None if spec.search(text) else f"{which}: no match of /{spec.pattern}/ in {short(text)}"
    if isinstance(spec, str):
        return None if text == spec else f"{which}: expected {short(spec)}, got {short(text)}"
    result = spec.result(spec.score_fn(text), None)  # type: ignore[arg-type]
    return None if result.state != "failed" else f"{which}: {spec.name} missed: {result.reason}"


def _check_content(spec: object, where: str) -> None:
    if spec is not None and not isinstance(spec, str | re.Pattern | Matcher):
        raise UsageError(
            f"{where}: before=/after= take the file's text, a compiled regex or a matcher, got {short(spec)}."
        )


def file_changed(path: str, *, before: ContentSpec | None = None, after: ContentSpec | None = None) -> Matcher:
    """The file existed in the fixture and was modified (its text before and after matching, when given)."""
    if before is None and after is None:
        return _path_matcher("file_changed", path, "modified")
    plain = _path_matcher("file_changed", path, "modified")
    for spec in (before, after):
        _check_content(spec, plain.name)
    wanted = path.removeprefix("./")

    def score(diff: Diff) -> ScoreLike:
        change = diff.change(wanted)
        if change is None or change.status != "modified":
            return Verdict(False, _changed(diff))
        misses = [
            m
            for m in (
                _content_misses("before", before, change.old_content),
                _content_misses("after", after, change.content),
            )
            if m
        ]
        return True if not misses else Verdict(False, "\n".join(misses), actual=short(change.content))

    return Matcher(name=plain.name, score_fn=score, expected=plain.expected)


def no_changes() -> Matcher:
    """Nothing in the workspace changed (no file added, modified or deleted)."""

    def score(diff: Diff) -> ScoreLike:
        return True if diff.is_empty() else Verdict(False, _changed(diff), actual=f"{len(diff.changed_paths)} changed")

    return Matcher(name="no_changes", score_fn=score, expected="an unchanged workspace")


def changed_paths(paths: Sequence[str]) -> Matcher:
    """Exactly these paths changed (added, modified or deleted), in any order."""
    if isinstance(paths, str) or not all(isinstance(p, str) for p in paths):
        raise UsageError(f"changed_paths() takes a list of workspace-relative paths, got {short(paths)}.")
    wanted = sorted(p.removeprefix("./") for p in paths)

    def score(diff: Diff) -> ScoreLike:
        seen = sorted(diff.changed_paths)
        if seen == wanted:
            return True
        extra, missing = sorted(set(seen) - set(wanted)), sorted(set(wanted) - set(seen))
        return Verdict(False, f"unexpected: {short(extra)}; unchanged: {short(missing)}", actual=short(seen))

    return Matcher(name=f"changed_paths({short(wanted)})", score_fn=score, expected=f"exactly {short(wanted)} changed")


def file_added(path: str) -> Matcher:
    """The file did not exist in the fixture and was created."""
    return _path_matcher("file_added", path, "added")


def file_deleted(path: str) -> Matcher:
    """The file existed in the fixture and was deleted."""
    return _path_matcher("file_deleted", path, "deleted")


def regex(pattern: str | re.Pattern[str], what: str) -> re.Pattern[str]:
    """`pattern` as a compiled regular expression: a string is one, as in `re.search` (`re.escape` for literals)."""
    if isinstance(pattern, re.Pattern):
        return pattern
    if not isinstance(pattern, str):
        raise UsageError(f"{what} takes a regular expression (a string or re.compile(...)), got {short(pattern)}.")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise UsageError(
            f"{what}: {pattern!r} is not a valid regular expression ({exc}); "
            "to search for the text literally, pass re.escape(text)."
        ) from None


DiffSide = Literal["added", "removed", "both"]
_SIDES: tuple[DiffSide, ...] = ("added", "removed", "both")


def not_in_diff(pattern: str | re.Pattern[str], *, side: DiffSide = "both") -> Matcher:
    """The unified diff has no match of the regular expression `pattern` (e.g. no secrets written).

    A string is a regular expression, as in `re.search`: `not_in_diff(r"sk-[A-Za-z0-9]{8,}")`. To look for a
    text literally, pass `re.escape(text)`. `side="added"` searches only the lines the diff adds (`+`), so a secret
    the agent removed does not count; `side="removed"` only the lines it removes (`-`); `"both"`, the default, the
    whole text, headers and summaries included.
    """
    regex_ = regex(pattern, "not_in_diff()")
    if side not in _SIDES:
        raise UsageError(f"not_in_diff(side={side!r}): the side is one of {', '.join(_SIDES)}.")

    def score(diff: Diff) -> ScoreLike:
        for first_line, text in _searched(diff.text, side):
            found = regex_.search(text)
            if found is not None:
                line = first_line + text[: found.start()].count("\n")
                return Verdict(False, f"found at line {line} of the diff", actual=short(found.group()))
        return True

    name = f"not_in_diff(/{regex_.pattern}/" + ("" if side == "both" else f", side={side!r}") + ")"
    where = "in the diff" if side == "both" else f"in the diff's {side} lines"
    return Matcher(name=name, score_fn=score, expected=f"no match {where}")


def _searched(text: str, side: DiffSide) -> list[tuple[int, str]]:
    """`(first line number, text)` pieces of the diff to search: the whole text, or each line its hunks add or
    remove (without the `+`/`-`)."""
    if side == "both":
        return [(1, text)]
    mark = "+" if side == "added" else "-"
    picked: list[tuple[int, str]] = []
    in_hunk = False
    for number, line in enumerate(text.split("\n"), start=1):
        if line.startswith("diff --git "):
            in_hunk = False
        elif line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith(mark):
            picked.append((number, line[1:]))
    return picked


def no_failed_shell_commands() -> Matcher:
    """No shell command (sandbox command or agent-reported shell action) exited non-zero."""

    def score(events: Sequence[Event]) -> ScoreLike:
        failed = [e for e in events if isinstance(e, ActionCalledEvent) and e.kind == "shell" and e.status == "failed"]
        if not failed:
            return True
        listed = "; ".join(f"{short(e.input)} -> exit {e.exit_code}" for e in failed[:10])
        return Verdict(False, f"failed commands: {listed}", actual=f"{len(failed)} failed")

    return Matcher(name="no_failed_shell_commands", score_fn=score, expected="every shell command exits 0")
