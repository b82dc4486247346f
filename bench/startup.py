"""Benchmark (run by hand): how long `niceeval` takes to start, as a user runs it (a new process each time).

Measured, each the median of `--repeats` runs (at least 11), all interleaved round by round so that a busy
moment of the machine falls on every command alike:

- `python -c pass` and `python -c "import pydantic, sqlalchemy"`: yardsticks of this machine, in the same run;
- `niceeval --help`;
- `niceeval run` of a one-eval project (`t.check(1, equals(1))`) with the store on (SQLite, the default) and with
  `--no-store`.

Modules load from bytecode, as from an installed package: the children write and read it under a temporary
`PYTHONPYCACHEPREFIX` (also when PYTHONDONTWRITEBYTECODE is set here), warmed by one untimed run of each command.
`--from-source` measures the other case (every niceeval module compiled at each start, as in a checkout run with
PYTHONDONTWRITEBYTECODE=1): 0.1-0.15 s more.

Each niceeval figure is also printed as a ratio to both yardsticks, and with its CPU time (user + system, the
median too): on a busy shared machine wall times wander with the load, CPU times far less. With `--before REV`
the same commands run a second time against that commit (checked out in a detached `git worktree`, put first on
PYTHONPATH), in the same rounds, so before and after are read side by side. Targets (issue 20): `--help` <= 0.15
s, one-eval run <= 0.30 s.

    python bench/startup.py [--repeats 11] [--before REV] [--from-source]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EVAL = """\
from niceeval import define_eval
from niceeval.expect import equals


@define_eval
def one(t):
    t.check(1, equals(1))
"""
YARDSTICKS = {"python -c pass": ["-c", "pass"], "import pydantic, sqlalchemy": ["-c", "import pydantic, sqlalchemy"]}
COMMANDS = {
    "niceeval --help": ["-m", "niceeval.cli", "--help"],
    "run (store on)": ["-m", "niceeval.cli", "run"],
    "run --no-store": ["-m", "niceeval.cli", "run", "--no-store"],
}


@dataclass
class Machine:
    """The environment every child runs in."""

    pycache: Path | None
    """Where bytecode is written and read (None: niceeval's modules are compiled from source at each start)."""

    def env(self, source: Path | None = None) -> dict[str, str]:
        env = dict(os.environ)
        if self.pycache is not None:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(self.pycache)
        else:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        if source is not None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source), env.get("PYTHONPATH")]))
        return env


@dataclass
class Side:
    """One checkout of niceeval to time: its source on PYTHONPATH (None: the installed one)."""

    name: str
    source: Path | None
    times: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[str, list[float]] = field(default_factory=dict)


def timed(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one run of the command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=60)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(sides: list[Side], project: Path, repeats: int, machine: Machine) -> dict[str, list[float]]:
    """Every command of every side once per round, `repeats` rounds; the yardsticks' times are returned."""
    yardsticks: dict[str, list[float]] = {name: [] for name in YARDSTICKS}
    for args in YARDSTICKS.values():
        timed(args, project, machine.env())  # warm-up (bytecode written, files cached): not timed
    for side in sides:
        for args in COMMANDS.values():
            timed(args, project, machine.env(side.source))  # the first also creates the store: not timed
        side.times = {name: [] for name in COMMANDS}
        side.cpu = {name: [] for name in COMMANDS}
    for _ in range(repeats):
        for name, args in YARDSTICKS.items():
            yardsticks[name].append(timed(args, project, machine.env())[0])
        for side in sides:
            for name, args in COMMANDS.items():
                wall, cpu = timed(args, project, machine.env(side.source))
                side.times[name].append(wall)
                side.cpu[name].append(cpu)
    return yardsticks


def report(sides: list[Side], yardsticks: dict[str, list[float]]) -> None:
    bare = statistics.median(yardsticks["python -c pass"])
    heavy = statistics.median(yardsticks["import pydantic, sqlalchemy"])
    print(f"{'python -c pass':<40} {bare:7.3f} s")
    print(f"{'python -c import pydantic, sqlalchemy':<40} {heavy:7.3f} s")
    print(f"{'':<40} {'median':>9} {'min':>7} {'x pass':>7} {'x imports':>9} {'CPU median':>12}")
    for name in COMMANDS:
        for side in sides:
            times = side.times[name]
            median = statistics.median(times)
            cpu = statistics.median(side.cpu[name])
            label = f"{name} [{side.name}]"
            print(
                f"{label:<40} {median:7.3f} s {min(times):6.3f} {median / bare:7.1f} {median / heavy:9.2f} "
                f"{cpu:10.3f} s"
            )


def checkout(rev: str, folder: Path) -> Path:
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(folder), rev], check=True, timeout=60)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=11, help="runs of each command (median of them; >= 11)")
    parser.add_argument("--before", metavar="REV", help="also time this commit, in the same rounds")
    parser.add_argument("--from-source", action="store_true", help="no bytecode: compile niceeval at each start")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        machine = Machine(pycache=None if args.from_source else Path(tmp) / "pycache")
        project = Path(tmp) / "project"
        (project / "evals").mkdir(parents=True)
        (project / "evals" / "one.py").write_text(EVAL)
        sides = [Side("after" if args.before else "this", REPO)]
        before = Path(tmp) / "before"
        if args.before:
            sides.insert(0, Side("before", checkout(args.before, before)))
        try:
            yardsticks = measure(sides, project, max(args.repeats, 11), machine)
        finally:
            if args.before:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(before)], timeout=60)
        report(sides, yardsticks)


if __name__ == "__main__":
    main()
