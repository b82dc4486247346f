"""The same judged suite through `pytest` (the niceeval plugin) and through `niceeval run`: wall time and peak RSS.

Run by hand (pytest does not collect it):

    python bench/pytest_vs_run.py [--evals 1000] [--latency 0.05] [--workers 2]

The project and the local LLM server are `bench/judge_suite.py`'s: `--evals` evals in one file, each one
`openai_agent` call and one `t.judge.rubric` call, against `niceeval testing serve --latency L`. Every
configuration turns the judge cache off (`--no-cache`, `--niceeval-no-cache`), so each makes all 2 x evals calls:

- `pytest`: `python -m pytest evals/`: the plugin runs the items one after another (pytest's model);
- `pytest -n W`: the same over W pytest-xdist workers (processes);
- `niceeval run`: the config's concurrency (8), results store off (`--no-store`), as pytest has none;
- `niceeval run +store`: the same with the default SQLite results store.

Columns: wall time (process start, imports and collection included); the floor, the model latency alone
(`2 x evals x latency / parallelism`, parallelism 1 for pytest, W for xdist, 8 for niceeval run); peak RSS of the
whole process tree, children included (the sum of every process's `VmRSS`, sampled from /proc every 10 ms); the
sum of each process's own peak (`VmHWM`), an upper bound of the former; CPU seconds of the tree (from `wait4`,
which includes reaped children); the number of processes seen.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from judge_suite import start_server, write_project

CONCURRENCY = 8
"""`niceeval run`'s default concurrency (the generated config sets none)."""


@dataclass
class Measured:
    wall_s: float
    tree_peak_mb: float
    hwm_sum_mb: float
    cpu_s: float
    processes: int
    returncode: int
    output: str


def _tree(root: int) -> list[int]:
    """`root` and every descendant still running."""
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        for task in Path(f"/proc/{pid}/task").glob("*/children"):
            try:
                stack += [int(child) for child in task.read_text().split()]
            except OSError:
                continue
    return found


def _memory_kb(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in kB; zeros when it is gone or a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0, 0
    rss = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
    hwm = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
    return (int(rss.group(1)) if rss else 0), (int(hwm.group(1)) if hwm else 0)


def measure(command: list[str], cwd: Path, env: dict[str, str]) -> Measured:
    """Run `command` to the end, sampling the memory of its process tree every 10 ms."""
    with tempfile.TemporaryFile("w+") as out:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
        tree_peak_kb = 0
        hwm_kb: dict[int, int] = {}
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            total = 0
            for member in _tree(process.pid):
                rss, hwm = _memory_kb(member)
                total += rss
                hwm_kb[member] = max(hwm_kb.get(member, 0), hwm)
            tree_peak_kb = max(tree_peak_kb, total)
            time.sleep(0.01)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return Measured(
            wall_s=wall,
            tree_peak_mb=tree_peak_kb / 1024,
            hwm_sum_mb=sum(hwm_kb.values()) / 1024,
            cpu_s=usage.ru_utime + usage.ru_stime,
            processes=len(hwm_kb),
            returncode=process.returncode,
            output=out.read(),
        )


def configurations(workers: int) -> list[tuple[str, list[str], int]]:
    """(name, command, parallelism) of each way to run the suite."""
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--niceeval-no-cache", "evals/"]
    run = [sys.executable, "-m", "niceeval.cli", "run", "--no-cache"]
    return [
        ("pytest", pytest, 1),
        (f"pytest -n {workers}", [*pytest, "-n", str(workers)], workers),
        ("niceeval run", [*run, "--no-store"], CONCURRENCY),
        ("niceeval run +store", run, CONCURRENCY),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (-n)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        server = start_server(args.latency, folder / "server.log")
        try:
            project = folder / "project"
            write_project(project, server.url, args.evals)
            env = {k: v for k, v in os.environ.items() if not k.startswith(("NICEEVAL", "GITHUB_"))}
            env.update(OPENAI_API_KEY="bench", OPENAI_BASE_URL=server.url)
            rows = []
            for name, command, parallelism in configurations(args.workers):
                done = measure(command, project, env)
                if done.returncode != 0:
                    raise SystemExit(f"{name} failed ({done.returncode}):\n{done.output[-3000:]}")
                agent, judge = server.counts()
                rows.append((name, 2 * args.evals * args.latency / parallelism, done, agent, judge))
            print_table(args, rows)
        finally:
            server.process.terminate()
            server.process.wait(timeout=10)


def print_table(args: argparse.Namespace, rows: list[tuple[str, float, Measured, int, int]]) -> None:
    print(
        f"{args.evals} evals x (1 agent call + 1 rubric judge call), server latency {args.latency}s, "
        f"{os.cpu_count()} CPUs, judge cache off"
    )
    columns = ("wall s", "floor s", "tree MB", "HWM sum", "cpu s", "procs", "agent", "judge")
    print(f"{'configuration':20} " + " ".join(f"{c:>8}" for c in columns))
    for name, floor, done, agent, judge in rows:
        print(
            f"{name:20} {done.wall_s:8.2f} {floor:8.2f} {done.tree_peak_mb:8.0f} {done.hwm_sum_mb:8.0f} "
            f"{done.cpu_s:8.1f} {done.processes:8d} {agent:8d} {judge:8d}"
        )


if __name__ == "__main__":
    main()
