"""Benchmark (run by hand): what closing a suite run of N eval runs costs the process that closes it.

Fills a store with one suite run of N evals (`store_scale.fill`: each eval run a conversation with a tool call, up
to three assertions, one judge call; reused when it is already there), then closes it again, in a fresh process
per measure, through the `Recorder` that `niceeval run` closes it with (`Recorder.finish`: the suite run's totals,
then its evals' kept tallies and its pass rate, and what `diff` reads per eval). Each close is measured twice, in
two processes: once for the wall and CPU time and the RSS it adds (sampled every 2 ms over the RSS just before it),
once under `tracemalloc` for the peak of what Python allocates, in total and in each of its three parts (`totals`,
`keep_tallies`, `keep_sums`).

    python bench/store_close.py [--evals 50000 100000] [--dir /tmp/storeclose] [--postgres DIR]

`--postgres DIR`: the stores are databases of a throwaway PostgreSQL cluster in DIR (`store_scale.postgres`).
The load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from store_scale import fill, load, postgres, url_of  # noqa: E402

from niceeval.store._kept_sums import keep_sums  # noqa: E402
from niceeval.store._recorder import Recorder, SuiteEnd  # noqa: E402
from niceeval.store._statements import totals  # noqa: E402
from niceeval.store._tallies import keep_tallies  # noqa: E402

END = SuiteEnd(status="finished", exit_code=1, duration_s=3.5)


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure_close(url: str) -> dict[str, float]:
    """Close the store's latest suite run again: wall, CPU and the RSS it adds (sampled)."""
    recorder = Recorder.open(url, ROOT)
    run_id = _latest(recorder)
    before = rss_mb()
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.002):
            peak[0] = max(peak[0], rss_mb())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    recorder.finish(run_id, END)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    done.set()
    sampler.join()
    recorder.close()
    return {
        "wall_s": wall,
        "cpu_s": after.ru_utime - cpu.ru_utime + after.ru_stime - cpu.ru_stime,
        "rss_before_mb": before,
        "rss_added_mb": max(peak[0], rss_mb()) - before,
    }


def measure_allocations(url: str) -> dict[str, float]:
    """Close it again under `tracemalloc`: the peak of what the close allocates, and of each of its parts."""
    recorder = Recorder.open(url, ROOT)
    run_id = _latest(recorder)
    connection = recorder.connection
    found: dict[str, float] = {}

    def peak_of(name: str, work: Callable[[], object]) -> None:
        tracemalloc.start()
        work()
        found[name] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()

    def part(work: Callable[..., object]) -> Callable[[], object]:
        def run() -> None:
            with connection._transaction() as session:  # the connection's own write transaction
                work(session, run_id)

        return run

    peak_of("close_peak_mb", lambda: recorder.finish(run_id, END))
    peak_of("totals_peak_mb", part(totals))
    peak_of("keep_tallies_peak_mb", part(keep_tallies))
    peak_of("keep_sums_peak_mb", part(keep_sums))
    recorder.close()
    return found


def _latest(recorder: Recorder) -> str:
    with recorder.connection._transaction() as session:
        row = session.execute("SELECT id FROM suite_runs ORDER BY started_at DESC LIMIT 1").fetchone()
    if row is None:
        raise SystemExit("the store holds no suite run")
    return str(row[0])


def child(kind: str, url: str) -> None:
    measured = measure_close(url) if kind == "close" else measure_allocations(url)
    print(json.dumps(measured))


def in_child(kind: str, url: str) -> dict[str, float]:
    found = subprocess.run(
        [sys.executable, __file__, "--child", kind, url], capture_output=True, text=True, check=True
    ).stdout
    measured: dict[str, float] = json.loads(found.splitlines()[-1])
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--evals", type=int, nargs="+", default=[50_000, 100_000])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/storeclose"))
    parser.add_argument("--postgres", type=Path, help="a throwaway PostgreSQL cluster with its data in this folder")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    for evals in args.evals:
        with ExitStack() as stack:
            if args.postgres is None:
                url = url_of(str(args.dir / f"1x{evals}.db"))
            else:
                url = stack.enter_context(postgres(args.postgres, f"close1x{evals}"))
            fill(url, 1, evals)
            in_child("close", url)  # a first close warms the page cache and settles the kept tallies
            closed = in_child("close", url)
            allocated = in_child("allocations", url)
        figures = " ".join(f"{name} {value:.2f}" for name, value in {**closed, **allocated}.items())
        print(f"close of {evals} eval runs: {figures}  ({load()})", flush=True)


if __name__ == "__main__":
    main()
