"""The judged suite in one process vs split over 4 shards run side by side, all writing one PostgreSQL store.

Run by hand (pytest does not collect it); PostgreSQL comes from a throwaway cluster (tests/_postgres.py), the
model from `niceeval testing serve` (bench/judge_suite.py):

    python bench/shards.py [--evals 1000] [--latency 0.05] [--concurrency 64] [--shards 4] [--repeat 3]

Configurations, interleaved, `--repeat` rounds, the median shown:

- `1 process`: `niceeval run --concurrency C --run-id ...`;
- `N shards`: N processes `niceeval run --shard I/N --concurrency C --run-id ...` started at once (as N CI
  machines would, but here on one machine's cores), one suite run;
- `N shards, C/N each`: the same with the concurrency split, so the model sees the same number of calls at once;
- `N shards, each alone`: the N shards one after another, each on the machine by itself, the longest one's wall
  shown: what N CI machines would take (on a small machine, shards side by side share its cores).

Columns: wall time from the first start to the last exit; peak RSS (`VmHWM`, sampled every 10 ms) of the largest
process and summed over the processes; CPU seconds of niceeval's processes (from `wait4`) and of the server. After
each configuration the suite run must be `finished` with every eval run stored once. Last, `niceeval report RUN`
on one of the sharded suite runs (wall, start-up included).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from judge_suite import start_server, write_project

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from _postgres import Cluster  # noqa: E402

from niceeval.store import Store  # noqa: E402


@dataclass
class Measured:
    wall_s: float
    peak_rss_mb: list[float]
    """Per process."""
    cpu_s: float
    """All processes together."""
    server_cpu_s: float


def _hwm_kb(pid: int) -> int:
    try:
        found = re.search(r"^VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    except (FileNotFoundError, ProcessLookupError):
        return 0
    return int(found.group(1)) if found else 0  # absent once the process is a zombie


def _cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def side_by_side(commands: list[list[str]], cwd: Path, env: dict[str, str], server_pid: int) -> Measured:
    """Start every command at once and wait for all: wall, per-process peak RSS, CPU (own rusage, from `wait4`)."""
    server_before = _cpu_of(server_pid)
    logs = [tempfile.TemporaryFile("w+") for _ in commands]
    started = time.perf_counter()
    processes = [
        subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
        for command, log in zip(commands, logs, strict=True)
    ]
    peaks = [0] * len(processes)
    cpu = 0.0
    running = {p.pid: i for i, p in enumerate(processes)}
    while running:
        for pid, index in list(running.items()):
            peaks[index] = max(peaks[index], _hwm_kb(pid))
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                processes[index].returncode = os.waitstatus_to_exitcode(status)
                cpu += usage.ru_utime + usage.ru_stime
                del running[pid]
        time.sleep(0.01)
    wall = time.perf_counter() - started
    for process, log in zip(processes, logs, strict=True):
        log.seek(0)
        if process.returncode != 0:
            raise SystemExit(f"{' '.join(map(str, process.args))} exited {process.returncode}:\n{log.read()[-3000:]}")
        log.close()
    return Measured(wall, [p / 1024 for p in peaks], cpu, _cpu_of(server_pid) - server_before)


def check_stored(url: str, run_id: str, evals: int) -> None:
    with Store.open(url) as store:
        info = store.run(run_id).run
        stored = store.outcomes(run_id)
    if info.status != "finished" or info.runs_done != evals or len(stored) != evals:
        raise SystemExit(f"suite run {run_id}: {info.status}, {info.runs_done} runs done, {len(stored)} stored")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cluster = Cluster()
    cluster.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            run(args, cluster, Path(tmp))
    finally:
        cluster.stop()


def run(args: argparse.Namespace, cluster: Cluster, folder: Path) -> None:
    server = start_server(args.latency, folder / "server.log")
    try:
        project = folder / "project"
        write_project(project, server.url, args.evals)
        env = {**os.environ, "OPENAI_API_KEY": "bench", "OPENAI_BASE_URL": server.url}
        env = {k: v for k, v in env.items() if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")}
        url = cluster.database()
        base = [sys.executable, "-m", "niceeval.cli", "run", "--no-cache", "--store", url]
        n, c = args.shards, args.concurrency
        configs = {
            "1 process": lambda rid: [[*base, "--concurrency", str(c), "--run-id", rid]],
            f"{n} shards": lambda rid: [
                [*base, "--concurrency", str(c), "--shard", f"{i}/{n}", "--run-id", rid] for i in range(1, n + 1)
            ],
            f"{n} shards, C/{n} each": lambda rid: [
                [*base, "--concurrency", str(max(c // n, 1)), "--shard", f"{i}/{n}", "--run-id", rid]
                for i in range(1, n + 1)
            ],
        }
        alone = f"{n} shards, each alone"
        measured: dict[str, list[Measured]] = {name: [] for name in [*configs, alone]}
        last_sharded = ""
        for round_ in range(args.repeat):
            for index, (name, commands) in enumerate(configs.items()):
                run_id = f"bench-{round_}-{index}"
                measured[name].append(side_by_side(commands(run_id), project, env, server.process.pid))
                check_stored(url, run_id, args.evals)
                last_sharded = run_id if index else last_sharded
            run_id = f"bench-{round_}-alone"
            each = [
                side_by_side([command], project, env, server.process.pid) for command in configs[f"{n} shards"](run_id)
            ]
            check_stored(url, run_id, args.evals)
            measured[alone].append(
                Measured(
                    max(m.wall_s for m in each),
                    [m.peak_rss_mb[0] for m in each],
                    sum(m.cpu_s for m in each),
                    sum(m.server_cpu_s for m in each),
                )
            )
        report = side_by_side(
            [[sys.executable, "-m", "niceeval.cli", "report", last_sharded, "--store", url]],
            project,
            env,
            server.process.pid,
        )
    finally:
        server.process.terminate()
        server.process.wait(timeout=10)
    print_table(args, measured, report)


def print_table(args: argparse.Namespace, measured: dict[str, list[Measured]], report: Measured) -> None:
    print(
        f"\n{args.evals} judged evals (1 agent + 1 judge call each), --no-cache, server latency {args.latency}s, "
        f"concurrency {args.concurrency}, one PostgreSQL store, median of {args.repeat} ({os.cpu_count()} CPUs, "
        "shared)"
    )
    print(f"{'configuration':22} {'wall s':>8} {'vs 1':>7} {'max RSS':>8} {'sum RSS':>8} {'cpu s':>7} {'srv cpu':>8}")
    base = statistics.median(m.wall_s for m in measured["1 process"])
    for name, runs in measured.items():
        wall = statistics.median(m.wall_s for m in runs)
        top = statistics.median(max(m.peak_rss_mb) for m in runs)
        total = statistics.median(sum(m.peak_rss_mb) for m in runs)
        cpu = statistics.median(m.cpu_s for m in runs)
        server = statistics.median(m.server_cpu_s for m in runs)
        walls = " ".join(f"{m.wall_s:.2f}" for m in runs)
        print(f"{name:22} {wall:8.2f} {wall / base:6.2f}x {top:7.0f}M {total:7.0f}M {cpu:7.1f} {server:8.1f}   {walls}")
    print(f"\nniceeval report of a sharded suite run: {report.wall_s:.2f}s, peak RSS {report.peak_rss_mb[0]:.0f} MB")


if __name__ == "__main__":
    main()
