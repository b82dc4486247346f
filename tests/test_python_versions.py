"""The Python versions the package metadata states are the ones `scripts/test.sh` (what CI runs) tests."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_classifiers_name_the_pythons_the_test_command_runs() -> None:
    script = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    tested = dict(re.findall(r"^(OLDEST|BETWEEN|NEWEST)=(3\.\d+)$", script, re.M))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    stated = [c.rpartition(" :: ")[2] for c in project["classifiers"] if re.fullmatch(r".*Python :: 3\.\d+", c)]
    assert sorted(tested) == ["BETWEEN", "NEWEST", "OLDEST"]
    assert stated == [tested["OLDEST"], tested["BETWEEN"], tested["NEWEST"]]
    assert project["requires-python"] == f">={tested['OLDEST']}"
