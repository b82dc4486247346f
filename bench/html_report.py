"""The HTML report of a large suite (issue 45): CPU, wall and peak RSS of writing it, its size, Chromium's load time.

Run by hand (pytest does not collect it):

    python bench/html_report.py [--sizes 10000,100000] [--base DIR] [--stored URL]

For each size it writes a JSONL of N cases (one in seven fails its check) and an eval with one cheap check per
case, as `bench/scale.py` does, then runs, one right after the other, `niceeval run evals --no-store` without and
with `--html report.html` (the difference is what the page costs a suite). `--stored URL` also times `niceeval
report RUN --html` on the latest finished suite run of that store (copy it first: opening it may upgrade its schema),
without and with `--html`. Each page is then opened from disk in headless Chromium (Playwright, as `tests/web`
drives it): the time to its `load` event and to the first layout of the whole page.

`--base DIR` runs another copy of the package (a folder holding `niceeval/`, e.g. `git archive BASE niceeval`
unpacked) first, for a before/after in one session. CPU is user + sys of the child; the load average is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "web"))

EVAL = """\
from niceeval import define_eval
from niceeval.expect import includes


@define_eval(cases="qa.jsonl", agent=lambda message: message)
def qa(t):
    t.check(t.case["answer"], includes("answer"))
"""


def write_project(root: Path, size: int) -> None:
    (root / "evals").mkdir(parents=True)
    (root / "evals" / "qa.py").write_text(EVAL)
    with (root / "evals" / "qa.jsonl").open("w") as out:
        for i in range(size):
            answer = f"reply {2 * i}" if i % 7 == 0 else f"answer {2 * i}"
            out.write(json.dumps({"id": f"q{i}", "question": f"What is {i} plus {i}?", "answer": answer}) + "\n")


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + sys) and peak RSS (MiB) of one child."""
    started = time.perf_counter()
    child = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {child.returncode}")
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def load_time(page: Path) -> tuple[float, float]:
    """Seconds to the page's `load` event and to the layout of all of it, in a fresh headless Chromium."""
    from _viewer import chromium

    with chromium() as browser:
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        started = time.perf_counter()
        tab.goto(page.as_uri(), wait_until="load", timeout=900_000)
        loaded = time.perf_counter() - started
        tab.evaluate("() => document.body.scrollHeight")
        return loaded, time.perf_counter() - started


def line(label: str, figures: tuple[float, float, float], page: Path | None = None) -> None:
    wall, cpu, rss = figures
    text = f"{label:<44} wall {wall:7.2f} s  CPU {cpu:6.2f} s  peak {rss:6.1f} MiB"
    if page is not None and page.exists():
        loaded, laid_out = load_time(page)
        text += f"  page {page.stat().st_size / 1e6:6.1f} MB, load {loaded:.2f} s, laid out {laid_out:.2f} s"
    print(text, flush=True)


def environment(base: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NICEEVAL")}
    if base is not None:
        env["PYTHONPATH"] = str(base)
    return env


def suite(size: int, versions: list[tuple[str, Path | None]]) -> None:
    with tempfile.TemporaryDirectory(prefix="html-bench-") as folder:
        root = Path(folder)
        write_project(root, size)
        for name, base in versions:
            env = environment(base)
            command = [sys.executable, "-m", "niceeval.cli", "run", "evals", "--no-store"]
            line(f"{size:,} cases, {name}, run", timed(command, root, env))
            page = root / f"{name}.html"
            line(f"{size:,} cases, {name}, run --html", timed([*command, "--html", str(page)], root, env), page)


def stored(url: str, versions: list[tuple[str, Path | None]]) -> None:
    from niceeval.store import Store

    with Store.open(url) as store:
        runs = store.runs(limit=1, status=["finished"])
    with tempfile.TemporaryDirectory(prefix="html-bench-") as folder:
        for info in runs:
            for name, base in versions:
                env = environment(base)
                command = [sys.executable, "-m", "niceeval.cli", "report", info.id, "--store", url]
                label = f"{info.evals:,} evals stored, {name}, report"
                line(label, timed(command, Path(folder), env))
                page = Path(folder) / f"{info.id}-{name}.html"
                line(f"{label} --html", timed([*command, "--html", str(page)], Path(folder), env), page)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="suite sizes to run (empty: none)")
    parser.add_argument("--base", type=Path, help="a folder holding another niceeval/ to run first")
    parser.add_argument("--stored", help="a store URL: time `report RUN --html` on its latest finished suite run")
    args = parser.parse_args()
    versions: list[tuple[str, Path | None]] = [("after", None)]
    if args.base is not None:
        versions.insert(0, ("before", args.base.resolve()))
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    for size in [int(s) for s in args.sizes.split(",") if s]:
        suite(size, versions)
    if args.stored:
        stored(args.stored, versions)
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
