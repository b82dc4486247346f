"""`niceeval power [RUN] [--detect DROP]` on a stored suite run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def niceeval(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "niceeval.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_power_says_the_smallest_detectable_drop_and_what_a_named_drop_needs(tmp_path: Path) -> None:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "e.py").write_text(
        "from niceeval import define_eval\n"
        "from niceeval.expect import equals\n"
        "@define_eval(cases=[{'q': i} for i in range(20)])\n"
        "def e(t):\n"
        "    t.check(t.case['q'] % 10 != 0, equals(True))\n"
    )
    ran = niceeval(tmp_path, "run", "--store", "s.db", "--runs", "2", "--min-pass-rate", "0")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "power: detects a drop of" in ran.stdout
    done = niceeval(tmp_path, "power", "--store", "s.db", "--detect", "0.1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].endswith("20 cases x 2 runs, pass rate 90%, run-to-run variance 0.000")
    assert lines[1].startswith("smallest drop in pass rate detected 80% of the time at alpha 0.05: 0.")
    assert lines[2].startswith("to detect a drop of 0.1: ") and lines[2].endswith(" cases at 2 runs each")


def test_power_refuses_a_drop_outside_zero_one(tmp_path: Path) -> None:
    done = niceeval(tmp_path, "power", "--detect", "5")
    assert done.returncode == 2 and "--detect must be between 0 and 1" in done.stderr
