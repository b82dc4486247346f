"""Benchmark (run by hand): server time of the viewer's heavy pages on a large store, and the server's memory.

Fills a SQLite store with N suite runs x M evals (each eval run: a conversation with a tool call, three
assertions, one judge call) through the store's own API, starts the real `niceeval view` on it, and times
requests to the runs list, the latest run's page and the compare page (latest vs the run before), plus one
eval run and one eval's history. Reports the median and worst of several requests, and the server's peak RSS.

    python bench/viewer_pages.py [--runs 100] [--evals 1000] [--requests 7] [--store /tmp/niceeval-bench.db]

The store is kept and reused when it already has the asked size (filling it takes a few minutes).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "web"))

from _stored import demo_suite  # noqa: E402

from niceeval.store import Store  # noqa: E402


def fill(path: Path, runs: int, evals: int) -> None:
    with Store.open(f"sqlite:///{path}") as store:
        have = store.runs(limit=runs + 1)
        if len(have) == runs and have[0].evals == evals:
            print(f"reusing {path} ({runs} runs x {evals} evals)")
            return
    path.unlink(missing_ok=True)
    started = time.perf_counter()
    with Store.open(f"sqlite:///{path}") as store:
        for variant in range(runs):
            demo_suite(store, evals=evals, variant=variant)
            if variant % 10 == 9:
                print(f"  {variant + 1} suite runs written ({time.perf_counter() - started:.0f} s)", flush=True)
    size = path.stat().st_size / 1e6
    print(f"filled {path}: {runs} x {evals} eval runs in {time.perf_counter() - started:.0f} s, {size:.0f} MB")


def peak_rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmHWM:\s+(\d+) kB", status)
    return int(found.group(1)) / 1024 if found else float("nan")


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmRSS:\s+(\d+) kB", status)
    return int(found.group(1)) / 1024 if found else float("nan")


def time_page(client: httpx.Client, path: str, requests: int) -> tuple[float, float, int]:
    timings = []
    size = 0
    for _ in range(requests):
        started = time.perf_counter()
        response = client.get(path)
        timings.append(time.perf_counter() - started)
        assert response.status_code == 200, (path, response.status_code, response.text[:500])
        size = len(response.content)
    return statistics.median(timings), max(timings), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--evals", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=7)
    parser.add_argument("--store", type=Path, default=Path("/tmp/niceeval-bench-viewer.db"))
    args = parser.parse_args()
    fill(args.store, args.runs, args.evals)
    with Store.open(f"sqlite:///{args.store}") as store:
        latest = store.runs(limit=1)[0].id
    server = subprocess.Popen(
        [sys.executable, "-m", "niceeval.cli", "view", "--port", "0", "--store", f"sqlite:///{args.store}"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = re.search(r"on (\S+)", server.stdout.readline()).group(1)  # type: ignore[union-attr]
        print(f"server idle: {rss_mb(server.pid):.0f} MB RSS")
        pages = {
            "runs list": "/",
            "run page (1000 evals)": f"/runs/{latest}",
            "compare (latest vs previous)": "/compare",
            "compare, all evals": "/compare?show=all",
            "eval run": f"/runs/{latest}/eval?id=evals/support_1.py::case_001",
            "eval history": "/evals/history?id=evals/support_1.py::case_001",
        }
        with httpx.Client(base_url=url.rstrip("/"), timeout=120) as client:
            client.get("/")  # warm up: imports, templates, the store's connection pool
            print(f"{'page':<30} {'median':>9} {'worst':>9} {'bytes':>9}")
            for name, path in pages.items():
                median, worst, size = time_page(client, path, args.requests)
                print(f"{name:<30} {median * 1000:>7.0f}ms {worst * 1000:>7.0f}ms {size:>9,}")
        print(f"server peak: {peak_rss_mb(server.pid):.0f} MB RSS (now {rss_mb(server.pid):.0f} MB)")
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
