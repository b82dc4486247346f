"""A workspace diff as the viewer and the HTML report show it: one collapsible section per file, lines highlighted.

The text is the agent's output, so untrusted: every line goes through Pygments' HTML formatter (which escapes it)
or `markupsafe.escape`; nothing of it is ever inserted as markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

OPEN_UP_TO = 4
"""Files shown open; past this many, every file starts collapsed."""


@dataclass(frozen=True, slots=True)
class DiffLine:
    css: str
    """`diff-add`, `diff-del`, `diff-hunk`, `diff-file` or `diff-ctx`."""
    html: Markup


@dataclass(frozen=True, slots=True)
class DiffFile:
    path: str
    added: int
    removed: int
    lines: tuple[DiffLine, ...]


def diff_files(text: str) -> list[DiffFile]:
    """The unified diff `text` (as `niceeval.sandbox.Diff.text` writes it) split per file, highlighted."""
    sections: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("diff --git ") or not sections:
            sections.append([])
        sections[-1].append(line)
    return [_file(section) for section in sections]


def _file(lines: list[str]) -> DiffFile:
    head = lines[0]
    path = head.split(" b/", 1)[1] if head.startswith("diff --git ") and " b/" in head else head
    highlight = _highlighter(path)
    shown: list[DiffLine] = []
    added = removed = 0
    in_hunk = False
    for line in lines:
        if line.startswith("@@"):
            in_hunk = True
            shown.append(DiffLine("diff-hunk", Markup(escape(line))))
        elif in_hunk and line[:1] in ("+", "-", " "):
            css = {"+": "diff-add", "-": "diff-del", " ": "diff-ctx"}[line[0]]
            added += line[0] == "+"
            removed += line[0] == "-"
            shown.append(DiffLine(css, Markup(escape(line[0])) + highlight(line[1:])))
        else:
            shown.append(DiffLine("diff-file", Markup(escape(line))))
    return DiffFile(path=path, added=added, removed=removed, lines=tuple(shown))


def _highlighter(path: str) -> Any:
    """A function from one line of code to its highlighted HTML, by the file's language (plain when unknown)."""
    from pygments import highlight  # type: ignore[import-untyped]
    from pygments.formatters import HtmlFormatter  # type: ignore[import-untyped]
    from pygments.lexers import get_lexer_for_filename  # type: ignore[import-untyped]
    from pygments.util import ClassNotFound  # type: ignore[import-untyped]

    try:
        lexer = get_lexer_for_filename(path, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return lambda code: Markup(escape(code))
    formatter = HtmlFormatter(nowrap=True)
    return lambda code: Markup(highlight(code, lexer, formatter).rstrip("\n"))
