"""The design notes are a map that stays true: every package names its note, every note is in the index."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DESIGN = ROOT / "docs" / "design"
LINK = re.compile(r"^Design: (docs/design/\S+\.md)$", re.M)


def packages() -> list[Path]:
    return [ROOT / "niceeval" / "__init__.py", *sorted((ROOT / "niceeval").glob("*/__init__.py"))]


def test_every_package_docstring_names_a_design_note_that_exists() -> None:
    problems = []
    for init in packages():
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        found = LINK.findall(docstring)
        if len(found) != 1:
            problems.append(f"{init.relative_to(ROOT)}: {len(found)} 'Design: docs/design/...' lines, want 1")
        elif not (ROOT / found[0]).is_file():
            problems.append(f"{init.relative_to(ROOT)}: {found[0]} does not exist")
    assert problems == []


def test_the_index_lists_every_note_and_every_listed_note_exists() -> None:
    index = (DESIGN / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"\]\(([\w-]+\.md)\)", index))
    notes = {path.name for path in DESIGN.glob("*.md")} - {"README.md"}
    assert listed == notes
