"""Time preparing a LocalSandbox from a fixture of small files, and diffing it after a few edits.

Run by hand (not a test):

    python bench/sandbox_prepare.py [--files 1000] [--modified 10] [--rounds 5]

Prints the median and best of each phase: create (copy + baseline), diff, close.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import anyio

from niceeval.sandbox import LocalSandbox

_DIRECTORIES = 20


@dataclass(frozen=True)
class Round:
    create: float
    diff: float
    close: float
    changed: int
    diff_chars: int


def make_fixture(root: Path, files: int) -> int:
    """Write `files` small Python modules (about 1.5 KB each) under `root`; return the total bytes."""
    total = 0
    for index in range(files):
        path = root / f"pkg{index % _DIRECTORIES}" / f"module_{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "".join(f"def function_{n}(value):\n    return value * {n} + {index}\n\n" for n in range(30))
        path.write_text(body)
        total += len(body)
    (root / "EVAL.py").write_text("def test_placeholder():\n    pass\n")
    return total


async def one_round(fixture: Path, files: int, modified: int) -> Round:
    started = time.perf_counter()
    sandbox = await LocalSandbox.create(fixture)
    created = time.perf_counter()
    step = max(files // modified, 1)
    for index in range(0, step * modified, step):
        rel = f"pkg{index % _DIRECTORIES}/module_{index}.py"
        text = await sandbox.read_text(rel)
        await sandbox.write_text(rel, text.replace("value * 3 +", "value * 333 +"))
    edited = time.perf_counter()
    diff = await sandbox.diff()
    diffed = time.perf_counter()
    await sandbox.close()
    closed = time.perf_counter()
    return Round(created - started, diffed - edited, closed - diffed, len(diff.changed_paths), len(diff.text))


def _describe(label: str, seconds: list[float]) -> str:
    return f"{label:<26} median {statistics.median(seconds) * 1000:7.1f} ms   best {min(seconds) * 1000:7.1f} ms"


async def main(files: int, modified: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="niceeval-bench-") as temp:
        fixture = Path(temp) / "fixture"
        total_bytes = make_fixture(fixture, files)
        await one_round(fixture, files, modified)  # warm the page cache and imports
        results = [await one_round(fixture, files, modified) for _ in range(rounds)]
    print(f"fixture: {files} files, {total_bytes / 1024:.0f} KiB; {modified} modified; {rounds} rounds")
    print(_describe("create (copy + baseline)", [r.create for r in results]))
    print(_describe("diff", [r.diff for r in results]))
    print(_describe("close (remove)", [r.close for r in results]))
    print(f"diff: {results[0].changed} changed paths, {results[0].diff_chars} characters of text")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--modified", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    arguments = parser.parse_args()
    anyio.run(main, arguments.files, arguments.modified, arguments.rounds)
