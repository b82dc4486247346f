"""A large dataset through `niceeval run`: peak RSS and wall time against a plain Python loop (issue 45).

Run by hand (pytest does not collect it): `python bench/scale.py [--sizes 10000,100000] [--no-store]`.

For each size it writes a JSONL of N rows (~150 bytes: an id, a question, an answer, metadata), an eval file with
`cases=` and one cheap check per case, then, in one round and one after the other on the same file:

- `niceeval run evals --runs 1 --json report.json` (store on, in the project's `.niceeval/results.db`), its wall
  time and its peak RSS (the child's `ru_maxrss`);
- the yardstick: a plain Python loop that reads the same file, applies the same check to each row and writes
  the same shape of JSON report (one object per run) with `json.dump`.

The figures are ratios taken in one run: niceeval's wall and CPU time (user + system) over the loop's, and each
size's peak RSS (`rss_mib`: the child's own high-water mark, `VmHWM`, last read before it exits; the child's
`ru_maxrss`, `maxrss_mib`, also counts the pages of this process it was forked from, carried over `exec`, which
after the first size's report is read are most of it) over the smallest size's (flat memory means a ratio near
1.0), with the slope in KiB per case between consecutive sizes.
niceeval's RSS is also sampled every tenth of a second while it runs (`rss_at_mib`: at a quarter, half and three
quarters of its wall time; the peak, `rss_mib`, may come at the close, when the store finishes the run), and
its CPU time (user + sys) is given beside the wall: on a shared machine the CPU is the steadier figure.
The issue's target size is a million cases (`--sizes 10000,1000000`); on a busy machine that takes long enough
that the slope between 100,000 and 300,000 is the figure to project from.

`--base DIR` runs another copy of the package (a folder holding `niceeval/`, e.g. `git archive BASE niceeval`
unpacked) with this environment's dependencies, for a before/after in one session.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

EVAL = """\
from niceeval import define_eval
from niceeval.expect import includes


@define_eval(cases="qa.jsonl", agent=lambda message: message)
def qa(t):
    t.check(t.case["answer"], includes("answer"))
"""

LOOP = """\
import json, sys, time

started = time.time()
runs = []
with open(sys.argv[1], "rb") as rows:
    for line in rows:
        row = json.loads(line)
        passed = "answer" in row["answer"]
        runs.append({"eval_id": "evals/qa.py::qa[" + row["id"] + "]", "run_index": 0, "passed": passed,
                     "score": 1.0 if passed else 0.0, "metadata": row["metadata"],
                     "checks": [{"name": "includes", "passed": passed}], "started": started})
with open(sys.argv[2], "w") as out:
    json.dump({"runs": runs, "summary": {"runs": len(runs), "passed": sum(r["passed"] for r in runs)}}, out)
"""


def _write_project(root: Path, size: int) -> None:
    (root / "evals").mkdir()
    (root / "evals" / "qa.py").write_text(EVAL)
    with (root / "evals" / "qa.jsonl").open("w") as out:
        for i in range(size):
            row = {
                "id": f"q{i}",
                "question": f"What is {i} plus {i}, written out in words?",
                "answer": f"answer {2 * i}",
                "metadata": {"split": "golden" if i % 2 else "holdout", "source": "bench"},
            }
            out.write(json.dumps(row) + "\n")


class _Sampler(threading.Thread):
    """The child's resident set size every tenth of a second, and its high-water mark, from /proc (empty and 0
    where there is no /proc)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.samples: list[int] = []
        self.high = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.1):
            try:
                status = Path(f"/proc/{self.pid}/status").read_text()
            except OSError:
                return
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    self.samples.append(int(line.split()[1]))
                if line.startswith("VmHWM:"):
                    self.high = max(self.high, int(line.split()[1]))


def _timed(
    command: list[str], cwd: Path, env: dict[str, str] | None = None
) -> tuple[float, float, int, int, list[int]]:
    """Wall and CPU seconds, the peak RSS in KiB of one child as `wait4` reports it and as its own high-water mark
    (KiB), and its RSS sampled while it ran."""
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.chdir(cwd)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.execve(command[0], command, env if env is not None else os.environ)
    sampler = _Sampler(pid)
    sampler.start()
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - started
    sampler.done.set()
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, sampler.high, sampler.samples


def _at(samples: list[int], share: float) -> float | None:
    return round(samples[int(share * (len(samples) - 1))] / 1024, 1) if samples else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--no-store", action="store_true")
    parser.add_argument("--base", type=Path, help="a folder holding another niceeval/ to run instead")
    args = parser.parse_args()
    niceeval = [str(Path(sys.executable).with_name("niceeval"))]
    env = None
    if args.base is not None:  # without site (the editable install's finder), this environment's packages on the path
        site = next(p for p in sys.path if p.endswith("site-packages"))
        env = {**os.environ, "PYTHONPATH": f"{args.base.resolve()}{os.pathsep}{site}"}
        niceeval = [sys.executable, "-S", "-m", "niceeval"]
    rows = []
    for size in map(int, args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            _write_project(root, size)
            (root / "loop.py").write_text(LOOP)
            store = ["--no-store"] if args.no_store else []
            run = [*niceeval, "run", "evals", "--runs", "1", "--json", "report.json", *store]
            wall, cpu, maxrss, rss, samples = _timed(run, root, env)
            report = json.loads((root / "report.json").read_text())
            loop = [sys.executable, "loop.py", "evals/qa.jsonl", "loop.json"]
            loop_wall, loop_cpu, _, loop_rss, _ = _timed(loop, root)
            data = {
                "cases": size,
                "row_bytes": round((root / "evals" / "qa.jsonl").stat().st_size / size),
                "evals_reported": len(report["evals"]),
                "wall_s": round(wall, 2),
                "cpu_s": round(cpu, 2),
                "rss_mib": round(rss / 1024, 1),
                "maxrss_mib": round(maxrss / 1024, 1),
                "rss_at_mib": [_at(samples, share) for share in (0.25, 0.5, 0.75)],
                "loop_wall_s": round(loop_wall, 2),
                "loop_rss_mib": round(loop_rss / 1024, 1),
                "wall_over_loop": round(wall / loop_wall, 2),
                "loop_cpu_s": round(loop_cpu, 2),
                "cpu_over_loop": round(cpu / loop_cpu, 2),
                "load": round(os.getloadavg()[0], 1),
            }
            rows.append(data)
            print(json.dumps(data), flush=True)
    first = rows[0]
    load = os.getloadavg()[0]
    for before, data in zip([None, *rows], rows, strict=False):
        slope = ""
        if before is not None:
            per_case = (data["rss_mib"] - before["rss_mib"]) * 1024 / (data["cases"] - before["cases"])
            slope = f", {per_case:.2f} KiB a case since {before['cases']:,}"
        print(
            f"{data['cases']:>9,} cases: peak RSS {data['rss_mib']} MiB "
            f"({data['rss_mib'] / first['rss_mib']:.2f}x the {first['cases']:,}-case peak{slope}), "
            f"wall {data['wall_s']} s = {data['wall_over_loop']}x the plain loop, CPU {data['cpu_s']} s = "
            f"{data['cpu_over_loop']}x; load average {load:.1f}"
        )


if __name__ == "__main__":
    main()
