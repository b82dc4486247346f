"""What the results store costs, on SQLite and PostgreSQL.

Run by hand (pytest does not collect it); PostgreSQL comes from a throwaway cluster (tests/_postgres.py):

    python bench/store.py [--evals 1000] [--latency 0.05] [--concurrency 64] [--repeat 3]
                          [--suites 100] [--skip-suite] [--skip-big] [--skip-postgresql] [--before CHECKOUT]
                          [--instructions]

1. The judged suite of `bench/judge_suite.py` (`--evals` evals, each one agent call and one rubric judge call
   against `niceeval testing serve --latency L`), run by the real `niceeval run --no-cache` with the store off
   (`--no-store`), on SQLite and on PostgreSQL; `--repeat` rounds, configurations interleaved, the median
   shown (each round runs them in the reverse order of the one before, so a drift of the machine weighs on all
   alike). Columns: wall time, CPU time (user + system) and peak RSS (VmHWM) of the measured process, and the
   change against store off (of the medians, and `paired`: the median of each round's ratio to that round's
   store-off run, with a 95% bootstrap interval of that median when there are 5 rounds or more). `--before`: each
   round also runs store off, SQLite (and PostgreSQL) with the niceeval of another checkout (its folder put first
   on `PYTHONPATH`), each compared with that checkout's store off, so a change is measured against the code before
   it in the same rounds.
   `--instructions`: each run is counted under Valgrind's cachegrind instead (instructions, in billions, and
   their ratio to store off per round: exact where time moves 15% between identical runs), next to the CPU
   seconds the PostgreSQL cluster's own processes used meanwhile.
2. Store size per eval run after those runs: the SQLite file (+ WAL) and the PostgreSQL database (less the size
   of an empty one) divided by the eval runs stored.
3. `niceeval runs` and `niceeval diff` on a store of `--suites` suite runs x `--evals` eval runs (synthetic records
   shaped like the judged suite's: one judge assertion with its call, five events, two turns), as commands (wall,
   start-up included) and as `Store.runs()` / `Store.diff()` calls.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from judge_suite import _CLOCK_TICKS, Measured, count_instructions, niceeval, start_server, write_project

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from _postgres import Cluster  # noqa: E402

from niceeval import AssertionResult, RunResult  # noqa: E402
from niceeval._core.assertion import JudgeCall  # noqa: E402
from niceeval._core.events import MessageEvent, UsageEvent  # noqa: E402
from niceeval._core.results import Spend  # noqa: E402
from niceeval._core.summary import PlannedEval  # noqa: E402
from niceeval.store import Store, SuiteRunStart  # noqa: E402
from niceeval.store._recorder import Recorder, SuiteEnd  # noqa: E402


def sqlite_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def pg_size(url: str) -> int:
    with Store.open(url) as store, store.engine.connect() as conn:
        return int(conn.exec_driver_sql("select pg_database_size(current_database())").scalar_one())


def suite_overhead(args: argparse.Namespace, cluster: Cluster, folder: Path) -> None:
    server = start_server(args.latency, folder / "server.log")
    try:
        project = folder / "project"
        write_project(project, server.url, args.evals)
        env = {**os.environ, "OPENAI_API_KEY": "bench", "OPENAI_BASE_URL": server.url}
        sqlite_path = folder / "results.db"
        pg_url = cluster.database()
        empty_pg = pg_size(pg_url)
        configs: dict[str, tuple[str, ...]] = {
            "store off": ("--no-store",),
            "SQLite": ("--store", str(sqlite_path)),
            "PostgreSQL": ("--store", pg_url),
        }
        if args.skip_postgresql:
            del configs["PostgreSQL"]
        envs = dict.fromkeys(configs, env)
        if args.before:
            before_env = {**env, "PYTHONPATH": str(Path(args.before).resolve())}
            configs["store off before"] = ("--no-store",)
            envs["store off before"] = before_env
            configs["SQLite before"] = ("--store", str(folder / "before.db"))
            envs["SQLite before"] = before_env
            if not args.skip_postgresql:
                configs["PostgreSQL before"] = ("--store", cluster.database())
                envs["PostgreSQL before"] = before_env
        measured: dict[str, list[Measured]] = {name: [] for name in configs}
        server_cpu: dict[str, list[float]] = {name: [] for name in configs}
        for round_ in range(args.repeat):
            for name, flags in list(configs.items())[:: 1 if round_ % 2 == 0 else -1]:
                before = cluster_cpu(cluster)
                if args.instructions:
                    command = [sys.executable, "-m", "niceeval.cli", "run", "--concurrency", str(args.concurrency)]
                    done = count_instructions([*command, "--no-cache", *flags], project, envs[name])
                    if done.returncode != 0:
                        raise SystemExit(f"niceeval run failed ({done.returncode}):\n{done.output[-3000:]}")
                else:
                    done = niceeval(project, envs[name], args.concurrency, "--no-cache", *flags)
                measured[name].append(done)
                server_cpu[name].append(cluster_cpu(cluster) - before)
    finally:
        server.process.terminate()
        server.process.wait(timeout=10)
    print(
        f"\n1. {args.evals} judged evals, --no-cache, concurrency {args.concurrency}, latency {args.latency}s, "
        f"median of {args.repeat} ({os.cpu_count()} CPUs, shared)"
    )
    off = measured["store off"]
    if args.instructions:
        print_instructions(measured, server_cpu)
        return
    base_wall = statistics.median(m.wall_s for m in off)
    base_rss = statistics.median(m.peak_rss_mb for m in off)
    print(
        f"{'configuration':17} {'wall s':>8} {'vs off':>8} {'paired':>8} {'95% interval':>16} {'cpu s':>7} "
        f"{'paired':>8} {'RSS MB':>8} {'vs off':>8}   all walls"
    )
    for name, runs in measured.items():
        wall = statistics.median(m.wall_s for m in runs)
        # each round's wall over the same round's store-off wall (the other checkout's for its own configurations):
        # a busy moment of the machine weighs on both
        base = measured["store off before"] if name.endswith(" before") else off
        ratios = [m.wall_s / o.wall_s for m, o in zip(runs, base, strict=True)]
        cpu_paired = statistics.median(m.cpu_s / o.cpu_s for m, o in zip(runs, base, strict=True))
        rss = statistics.median(m.peak_rss_mb for m in runs)
        walls = " ".join(f"{m.wall_s:.2f}" for m in runs)
        print(
            f"{name:17} {wall:8.2f} {100 * (wall / base_wall - 1):+7.1f}% "
            f"{100 * (statistics.median(ratios) - 1):+7.1f}% "
            f"{interval(ratios):>16} {statistics.median(m.cpu_s for m in runs):7.2f} {100 * (cpu_paired - 1):+7.1f}% "
            f"{rss:8.1f} {rss - base_rss:+7.1f}MB   {walls}"
        )
    stored = args.evals * args.repeat
    print(f"\n2. store size per eval run ({stored} judged eval runs stored per backend)")
    print(f"SQLite      {sqlite_size(sqlite_path) / stored / 1024:6.2f} KB")
    if "PostgreSQL" in measured:
        print(f"PostgreSQL  {(pg_size(pg_url) - empty_pg) / stored / 1024:6.2f} KB")


def cluster_cpu(cluster: Cluster) -> float:
    """User + system CPU seconds the PostgreSQL cluster's processes have used: the postmaster's own and its
    children's, running (each backend, the background writers) and ended (a connection's backend, once reaped)."""
    postmaster = int((cluster.data / "postmaster.pid").read_text().split()[0])
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        if pid == postmaster:
            total += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
        elif int(fields[1]) == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total / _CLOCK_TICKS


def print_instructions(measured: dict[str, list[Measured]], server_cpu: dict[str, list[float]]) -> None:
    """`--instructions`: each configuration's instructions (billions) and their ratio to store off, round by
    round; the PostgreSQL server's CPU seconds in the same runs (a process of its own: not counted in them)."""
    off = measured["store off"]
    print(f"{'configuration':17} {'instructions':>13} {'vs off':>8} {'range':>16} {'server cpu s':>13}")
    for name, runs in measured.items():
        ratios = sorted(m.cpu_s / o.cpu_s for m, o in zip(runs, off, strict=True))
        count = statistics.median(m.cpu_s for m in runs)
        spread = f"{100 * (ratios[0] - 1):+.2f}..{100 * (ratios[-1] - 1):+.2f}%"
        served = statistics.median(server_cpu[name])
        print(f"{name:17} {count:12.3f}G {100 * (statistics.median(ratios) - 1):+7.2f}% {spread:>16} {served:13.2f}")


def interval(ratios: list[float]) -> str:
    """A 95% bootstrap interval of the median of `ratios`, as percent changes (blank under 5 rounds)."""
    if len(ratios) < 5 or len(set(ratios)) < 2:
        return ""
    from scipy.stats import bootstrap

    found = bootstrap((ratios,), statistics.median, vectorized=False, method="percentile", random_state=0)
    low, high = found.confidence_interval
    return f"{100 * (low - 1):+.1f}..{100 * (high - 1):+.1f}%"


def synthetic(index: int, *, flip: bool) -> RunResult:
    """A record shaped like a judged eval run: one rubric assertion with its judge call, five events."""
    score = 0.4 if flip and index % 10 == 0 else 0.9
    prompt = "You are a strict grader. " * 12 + f"Reply to grade: Happy to help with order {index}."
    return RunResult(
        eval_id=f"evals/judged.py::judged_{index}",
        file="evals/judged.py",
        line=3 + 4 * index,
        outcome="scored" if score < 0.7 else "passed",
        duration_s=0.12,
        assertions=[
            AssertionResult(
                name="rubric",
                severity="soft",
                score=score,
                threshold=0.7,
                state="passed" if score >= 0.7 else "failed",
                reason="polite and on topic",
                location=f"evals/judged.py:{6 + 4 * index}",
                judge_calls=[
                    JudgeCall(
                        model="openai/gpt-4o-mini",
                        messages=[{"role": "user", "content": prompt}],
                        score=score,
                        reason="polite and on topic",
                        input_tokens=180,
                        output_tokens=25,
                        cost=0.00004,
                        latency=0.05,
                    )
                ],
            )
        ],
        events=[
            MessageEvent(role="user", text=f"Where is my order {index}?", seq=0),
            UsageEvent(model="openai/scripted", input_tokens=40, output_tokens=12, seq=1),
            MessageEvent(role="assistant", text=f"Happy to help with: Where is my order {index}?", seq=2),
            MessageEvent(role="user", text="thanks", seq=3),
            MessageEvent(role="assistant", text="You're welcome", seq=4),
        ],
        agent_spend=Spend(calls=1, tokens=52, cost=None, unpriced=["openai/scripted"]),
        judge_spend=Spend(calls=1, tokens=205, cost=0.00004),
    )


def fill(url: str, suites: int, evals: int) -> list[str]:
    plan = [
        PlannedEval(id=f"evals/judged.py::judged_{i}", file="evals/judged.py", line=3 + 4 * i) for i in range(evals)
    ]
    ids = []
    recorder = Recorder.open(url, REPO)
    try:
        for n in range(suites):
            run_id = f"bench{n:07d}"
            recorder.begin(SuiteRunStart(id=run_id, command=["niceeval", "run"]), plan)
            records = [synthetic(i, flip=n == suites - 1) for i in range(evals)]
            for start in range(0, evals, 250):
                recorder.add(run_id, records[start : start + 250])
            recorder.finish(run_id, SuiteEnd(status="finished", exit_code=0, duration_s=10.0))
            ids.append(run_id)
    finally:
        recorder.close()
    return ids


def timed(call: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def command_wall(*argv: str) -> float:
    def run() -> None:
        subprocess.run([sys.executable, "-m", "niceeval.cli", *argv], check=False, capture_output=True)

    return timed(run, repeat=3)


def big_store(args: argparse.Namespace, cluster: Cluster, folder: Path) -> None:
    print(f"\n3. a store of {args.suites} suite runs x {args.evals} eval runs")
    print(f"{'backend':12} {'fill s':>8} {'size MB':>8} {'runs cmd':>9} {'diff cmd':>9} {'runs()':>8} {'diff()':>8}")
    for name, url in (("SQLite", f"sqlite:///{folder / 'big.db'}"), ("PostgreSQL", cluster.database())):
        started = time.perf_counter()
        ids = fill(url, args.suites, args.evals)
        filled = time.perf_counter() - started
        size = sqlite_size(folder / "big.db") if name == "SQLite" else pg_size(url)
        runs_cmd = command_wall("runs", "--store", url)
        diff_cmd = command_wall("diff", ids[-2], ids[-1], "--store", url)
        with Store.open(url) as store:
            runs_call = timed(lambda: store.runs(limit=20))  # noqa: B023
            diff_call = timed(lambda: store.diff(ids[-2], ids[-1]))  # noqa: B023
            assert store.diff(ids[-2], ids[-1]).changed, "the last suite run's flips were not found"
        print(
            f"{name:12} {filled:8.1f} {size / 2**20:8.1f} {runs_cmd:8.2f}s {diff_cmd:8.2f}s "
            f"{runs_call * 1000:6.1f}ms {diff_call * 1000:6.1f}ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--suites", type=int, default=100)
    parser.add_argument("--skip-suite", action="store_true", help="skip the judged suite (parts 1 and 2)")
    parser.add_argument("--skip-big", action="store_true", help="skip the big store (part 3)")
    parser.add_argument("--skip-postgresql", action="store_true", help="the judged suite on SQLite only (part 1)")
    parser.add_argument(
        "--instructions", action="store_true", help="count the run's instructions under cachegrind (part 1)"
    )
    parser.add_argument("--before", help="a checkout whose niceeval also runs the suite on SQLite, each round (part 1)")
    args = parser.parse_args()
    cluster = Cluster()
    cluster.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            if not args.skip_suite:
                suite_overhead(args, cluster, Path(tmp))
            if not args.skip_big:
                big_store(args, cluster, Path(tmp))
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
