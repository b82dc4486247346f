"""A temporary niceeval project on disk, and the real `niceeval` command run in it as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]

ECHO_CONFIG = """\
from niceeval import define_config


def echo(message: str) -> str:
    return "echo: " + message


config = define_config(agent=echo)
"""

# Environment variables that change how rich renders (colour, width, terminal detection).
_RENDERING_VARS = ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "TERM", "COLUMNS", "LINES")


def line_in(text: str, needle: str) -> int:
    """1-based number of the first line of `text` containing `needle`."""
    return next(i for i, line in enumerate(text.splitlines(), start=1) if needle in line)


@dataclass(frozen=True)
class Result:
    """What one invocation of the command produced."""

    code: int
    stdout: str
    stderr: str
    wall_s: float
    json_text: str | None
    """The JSON report as written by this invocation (None: none was written)."""
    junit_text: str | None
    """The JUnit XML as written by this invocation (None: none was written)."""

    @property
    def output(self) -> str:
        """Everything the user saw: stdout then stderr."""
        return self.stdout + self.stderr

    def report(self) -> dict[str, Any]:
        """The parsed JSON report."""
        assert self.json_text is not None, f"no JSON report was written:\n{self.output}"
        data: dict[str, Any] = json.loads(self.json_text)
        return data

    def eval(self, name: str) -> dict[str, Any]:
        """The JSON report's entry for the eval whose id ends with `::name`."""
        evals: list[dict[str, Any]] = self.report()["evals"]
        found = [e for e in evals if e["id"].endswith(f"::{name}")]
        assert len(found) == 1, f"expected one eval named {name!r}, got {[e['id'] for e in evals]}"
        return found[0]

    def junit(self) -> ET.Element:
        """The parsed JUnit XML document's root."""
        assert self.junit_text is not None, f"no JUnit report was written:\n{self.output}"
        return ET.fromstring(self.junit_text.encode("utf-8"))

    def testcase(self, name: str) -> ET.Element:
        """The JUnit testcase of the eval `name` (one run)."""
        found = [c for c in self.junit().iter("testcase") if c.get("name") == name]
        assert len(found) == 1, f"expected one testcase named {name!r}"
        return found[0]


class Project:
    """A folder holding a niceeval project, and the command run inside it."""

    def __init__(self, root: Path, out: Path) -> None:
        self.root = root
        self.out = out

    def write(self, rel: str, text: str) -> Path:
        """Write `text` (dedented) to `rel` below the project root."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    def line_of(self, rel: str, needle: str) -> int:
        """1-based line of the first line of `rel` containing `needle`."""
        return line_in((self.root / rel).read_text(encoding="utf-8"), needle)

    def cli(
        self, *args: str, timeout: float = 60.0, cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> Result:
        """Run `niceeval ARGS` in the project (a fresh interpreter, as from a shell) and capture everything.

        `env` adds environment variables (the caller's `NICEEVAL*` ones are never passed on).
        """
        json_path, junit_path = self.out / "report.json", self.out / "report.xml"
        json_path.unlink(missing_ok=True)
        junit_path.unlink(missing_ok=True)
        extra = env or {}
        env = {k: v for k, v in os.environ.items() if k not in _RENDERING_VARS and not k.startswith("NICEEVAL")}
        env.update(COLUMNS="240", PYTHONIOENCODING="utf-8", **extra)
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-W", "error", "-m", "niceeval.cli", *args],
            cwd=cwd or self.root,
            env=env,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - start
        # niceeval reports every problem as a message; a traceback on stderr means it crashed.
        for crash in ("Traceback (most recent call last)", "Exception ignored"):
            assert crash not in proc.stderr, f"niceeval crashed:\n{proc.stderr}"
        return Result(
            code=proc.returncode,
            stdout=proc.stdout,
            stderr=proc.stderr,
            wall_s=wall,
            json_text=json_path.read_text(encoding="utf-8") if json_path.exists() else None,
            junit_text=junit_path.read_text(encoding="utf-8") if junit_path.exists() else None,
        )

    def run(self, *args: str, timeout: float = 60.0, env: dict[str, str] | None = None) -> Result:
        """`niceeval run ARGS`, writing the JSON and JUnit reports next to the project."""
        reports = ("--json", str(self.out / "report.json"), "--junit", str(self.out / "report.xml"))
        return self.cli("run", *args, *reports, timeout=timeout, env=env)


def make_project(base: Path) -> Project:
    """An empty project below `base` whose config sets an echo agent (`"echo: " + message`)."""
    root, out = base / "project", base / "out"
    root.mkdir()
    out.mkdir()
    made = Project(root, out)
    made.write("niceeval.config.py", ECHO_CONFIG)
    return made
