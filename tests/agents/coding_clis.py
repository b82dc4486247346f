"""Finding the pinned coding-agent CLIs the tests drive (installed by scripts/coding-clis.sh into .tools/npm)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / ".tools" / "npm" / "node_modules" / ".bin"


def cli(name: str) -> Path:
    """The CLI from .tools/npm (or PATH); skipped when missing, except under CI=true, where it must be there."""
    found = TOOLS / name if (TOOLS / name).exists() else shutil.which(name)
    if found is not None:
        return Path(found)
    reason = f"the {name!r} CLI is not installed (run bash scripts/coding-clis.sh)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)
