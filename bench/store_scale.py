"""Benchmark (run by hand): the viewer's pages and `niceeval diff` / `niceeval report` on runs of 100,000 evals.

Fills a SQLite store (or a PostgreSQL one with `--store postgresql://...`) with N suite runs x M evals (each eval
run as in `viewer_pages.py`: a conversation with a tool call, up to three assertions, one judge call), written
through the store's `Recorder` a few thousand eval runs at a time, so filling holds no whole suite run in memory.
Then starts the real `niceeval view` on it and times the runs list, the latest run's page (first page, a filter,
a sort, a far page), the compare page, one eval run and one eval's history (median and worst of several
requests; the compare page's first request, which computes and keeps the diff, apart), and the wall and CPU time
of `niceeval diff` (computed, then kept) and `niceeval report --json` on the two latest runs.

    python bench/store_scale.py [--runs 10] [--evals 100000] [--requests 7] [--compare-requests 2] [--compare-only]
                                [--store /tmp/scalestore/10x100k.db | --postgres /tmp/scalestore/pg]

`--postgres DIR` runs a throwaway PostgreSQL cluster from Debian's packages (`initdb`, `pg_ctl`, as
`tests/_postgres.py` does: a Unix socket in DIR, no TCP, fsync off), its data in DIR: made on first use, started
for the bench and stopped after it; each size gets its own database (`runs<N>x<M>`). Delete DIR to drop it. A
fill on PostgreSQL ends with `VACUUM ANALYZE` (the planner's statistics of a store in use).

`--distinct K` writes only the first K suite runs through the `Recorder`; the others are copies of them made in
SQL (`INSERT ... SELECT`: run j copies run j mod K, with new row ids and a later start), so 1,000 x 1,000 fills in
minutes on a loaded machine. The pages read the same rows either way; the copies' outcomes repeat every K runs.

The store is kept and reused when it already has the asked size. The load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import ColumnElement, Connection, Table, case, func, insert, literal, select, text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "web"))
sys.path.insert(0, str(ROOT / "tests"))

from _postgres import SUPERUSER, _bin_dir  # noqa: E402
from _stored import _demo_result  # noqa: E402

from niceeval._core.summary import PlannedEval  # noqa: E402
from niceeval.store import Store, SuiteRunStart, tables  # noqa: E402
from niceeval.store._recorder import Recorder, SuiteEnd  # noqa: E402

CHUNK = 2000
TAGS = (("support",), ("billing", "support"), ("search",))


def url_of(store: str) -> str:
    return store if "://" in store else f"sqlite:///{store}"


def fill(url: str, runs: int, evals: int, distinct: int | None = None) -> None:
    with Store.open(url) as store:
        have = store.runs(limit=runs + 1)
        if len(have) == runs and all(r.evals == evals and r.status == "finished" for r in have):
            print(f"reusing {url} ({runs} runs x {evals} evals)")
            return
        if have:
            raise SystemExit(f"{url} holds other runs; give an empty store or another path")
    started = time.perf_counter()
    ids = [f"evals/support_{n % 3}.py::case_{n:03d}" for n in range(evals)]
    plan = [PlannedEval(id=i, file=i.split("::")[0], line=10, tags=TAGS[n % 3], runs=1) for n, i in enumerate(ids)]
    with Store.open(url) as store:
        recorder = Recorder.of(store)
        try:
            for variant in range(min(runs, distinct or runs)):
                run_id = uuid.uuid4().hex[:12]
                start = SuiteRunStart(id=run_id, command=["niceeval", "run"], git_commit="0123abcd" * 5)
                recorder.begin(start, plan)
                for first in range(0, evals, CHUNK):
                    chunk = [_demo_result(ids[n], n, variant) for n in range(first, min(first + CHUNK, evals))]
                    recorder.add(run_id, chunk)
                recorder.finish(run_id, SuiteEnd(status="finished", exit_code=1, duration_s=3.5))
                print(f"  {variant + 1} suite runs written ({time.perf_counter() - started:.0f} s)", flush=True)
        finally:
            recorder.close()
    if distinct is not None and runs > distinct:
        copy_runs(url, runs, started)
    settle(url)
    print(f"filled {url}: {runs} x {evals} eval runs in {time.perf_counter() - started:.0f} s")


def settle(url: str) -> None:
    """On PostgreSQL, `VACUUM ANALYZE` the filled store: its planner's statistics as autovacuum leaves a store that
    has been in use (right after a bulk fill they describe the empty tables, and the plans are the wrong ones)."""
    with Store.open(url) as store:
        if store.engine.dialect.name != "postgresql":
            return
        with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE"))


OWNED_BY_EVAL_RUNS = (tables.events, tables.turns, tables.spans)
KEYED_BY_SUITE_RUN = (tables.suite_evals, tables.eval_tallies, tables.suite_tallies)
ID_TABLES = (tables.eval_runs, tables.assertions, tables.judge_calls)


def copy_runs(url: str, runs: int, started: float) -> None:
    """Copy the store's K suite runs (in SQL) until it holds `runs`, a lap of (up to) K copies per transaction:
    copy j is of run j mod K, its row ids those of its source plus a lap's offset."""
    with Store.open(url) as store:
        with store.engine.connect() as conn:
            sources = conn.execute(select(tables.suite_runs).order_by(tables.suite_runs.c.started_at)).mappings().all()
            tops = [conn.execute(select(func.max(t.c.id))).scalar() or 0 for t in ID_TABLES]
        last = max(row["started_at"] for row in sources)
        for lap in range(1, -(-runs // len(sources))):
            chosen = sources[: min(len(sources), runs - lap * len(sources))]
            with store.engine.begin() as conn:
                renamed: dict[str, str] = {}
                for n, source in enumerate(chosen):
                    renamed[source["id"]] = uuid.uuid4().hex[:12]
                    shift = last - sources[0]["started_at"] + timedelta(seconds=lap * len(sources) + n)
                    moved = {"id": renamed[source["id"]], "started_at": source["started_at"] + shift}
                    if source["finished_at"] is not None:
                        moved["finished_at"] = source["finished_at"] + shift
                    conn.execute(insert(tables.suite_runs).values({**source, **moved}))
                _copy_lap(conn, renamed, tops, lap)
            print(
                f"  {lap * len(sources) + len(chosen)} suite runs ({time.perf_counter() - started:.0f} s)", flush=True
            )
        if store.engine.dialect.name == "postgresql":
            with store.engine.begin() as conn:
                for table in ID_TABLES:
                    top = f"(SELECT max(id) FROM {table.name})"
                    conn.execute(text(f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), {top})"))


def _copy_lap(conn: Connection, renamed: dict[str, str], tops: list[int], lap: int) -> None:
    """Copy the rows of the source suite runs `renamed` names (old id -> new id): row ids up to `tops` (the
    sources'), moved by `lap` times them."""
    runs, asserted, calls = ID_TABLES
    run_offset, assertion_offset, call_offset = (top * lap for top in tops)
    new_id = case({old: literal(new) for old, new in renamed.items()}, value=runs.c.suite_run_id)
    for table in KEYED_BY_SUITE_RUN:
        mapped = case({old: literal(new) for old, new in renamed.items()}, value=table.c.suite_run_id)
        _copy(conn, table, {"suite_run_id": mapped}, table.c.suite_run_id.in_(list(renamed)))
    _copy(conn, runs, {"suite_run_id": new_id, "id": runs.c.id + run_offset}, runs.c.suite_run_id.in_(list(renamed)))
    of_runs = select(runs.c.id).where(runs.c.suite_run_id.in_(list(renamed)), runs.c.id <= tops[0])
    for table in OWNED_BY_EVAL_RUNS:
        _copy(conn, table, {"eval_run_id": table.c.eval_run_id + run_offset}, table.c.eval_run_id.in_(of_runs))
    moved = {"id": asserted.c.id + assertion_offset, "eval_run_id": asserted.c.eval_run_id + run_offset}
    _copy(conn, asserted, moved, asserted.c.eval_run_id.in_(of_runs))
    of_assertions = select(asserted.c.id).where(asserted.c.eval_run_id.in_(of_runs))
    moved = {"id": calls.c.id + call_offset, "assertion_id": calls.c.assertion_id + assertion_offset}
    _copy(conn, calls, moved, calls.c.assertion_id.in_(of_assertions))


def _copy(conn: Connection, table: Table, replaced: dict[str, Any], where: ColumnElement[bool]) -> None:
    """`INSERT INTO table SELECT ... WHERE where`, with the `replaced` columns' values computed."""
    names = [column.name for column in table.columns]
    chosen = select(*(replaced[n].label(n) if n in replaced else table.c[n] for n in names)).where(where)
    conn.execute(insert(table).from_select(names, chosen))


@contextmanager
def postgres(folder: Path, database: str) -> Iterator[str]:
    """A cluster with its data in `folder` (made on first use), running while the block runs: `database`'s URL."""
    bin_dir = _bin_dir()
    if bin_dir is None:
        raise SystemExit("PostgreSQL is not installed (Debian package `postgresql`; scripts/system-deps.sh)")
    as_root = os.geteuid() == 0
    prefix = ["runuser", "-u", "nobody", "--"] if as_root else []
    data, sockets = folder / "data", folder / "run"

    def run(*command: str) -> None:
        done = subprocess.run([*prefix, *command], capture_output=True, text=True, check=False, cwd=folder)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")

    sockets.mkdir(parents=True, exist_ok=True)
    if as_root:
        for path in (folder, sockets):
            os.chmod(path, 0o755)
            shutil.chown(path, "nobody")
    if not data.exists():
        run(str(bin_dir / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust", "--no-sync", "-E", "UTF8")
    options = (
        f"-c listen_addresses='' -c unix_socket_directories={sockets} -c fsync=off -c synchronous_commit=off "
        "-c full_page_writes=off"
    )
    run(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-o", options, "-w", "start")
    try:
        import psycopg

        with psycopg.connect(host=str(sockets), user=SUPERUSER, dbname="postgres", autocommit=True) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone() is None:
                conn.execute(f'CREATE DATABASE "{database}"')  # type: ignore[arg-type]  # a fixed-shape name
        yield f"postgresql+psycopg://{SUPERUSER}@/{database}?host={sockets}"
    finally:
        run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def server_cpu(pid: int) -> float:
    """The process's CPU seconds so far (user + system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    found = re.search(r"VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    return int(found.group(1)) / 1024 if found else float("nan")


def forget_diffs(url: str) -> None:
    """Empty `kept_diffs`, so the next diff of a pair is computed (what the first request after two runs close pays)."""
    with Store.open(url) as store, store.engine.begin() as conn:
        conn.execute(tables.kept_diffs.delete())


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


def pages(
    url: str, latest: str, requests: int, compare_requests: int, *, compare: bool = True, others: bool = True
) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "niceeval.cli", "view", "--port", "0", "--store", url], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        base = re.search(r"on (\S+)", server.stdout.readline()).group(1)  # type: ignore[union-attr]
        eval_id = "evals/support_1.py::case_001"
        wanted = {
            "runs list": "/",
            "run page": f"/runs/{latest}",
            "run page, failed only": f"/runs/{latest}?outcome=failed",
            "run page, by duration": f"/runs/{latest}?sort=duration&order=desc",
            "run page, page 400": f"/runs/{latest}?page=400",
            "run page, search": f"/runs/{latest}?q=case_0999",
            "compare (latest vs previous)": "/compare",
            "compare, all evals": "/compare?show=all",
            "eval run": f"/runs/{latest}/eval?id={eval_id}",
            "eval history": f"/evals/history?id={eval_id}",
        }
        wanted = {name: path for name, path in wanted.items() if ("compare" in name and compare) or others}
        with httpx.Client(base_url=base.rstrip("/"), timeout=300) as client:
            client.get("/")
            print(f"{'page':<30} {'median':>9} {'worst':>9} {'bytes':>10}   ({load()})")
            for name, path in wanted.items():
                if name == "compare (latest vs previous)":
                    forget_diffs(url)
                    started, used = time.perf_counter(), server_cpu(server.pid)
                    client.get(path)
                    cpu = server_cpu(server.pid) - used
                    first = f"{(time.perf_counter() - started) * 1000:.0f}ms wall, {cpu * 1000:.0f}ms server CPU"
                    print(f"{'compare, first request':<30} {first} (the diff computed and kept)", flush=True)
                used = server_cpu(server.pid)
                median, worst, size = time_page(client, path, compare_requests if "compare" in name else requests)
                cpu = (server_cpu(server.pid) - used) / (compare_requests if "compare" in name else requests)
                times = f"{median * 1000:>7.0f}ms {worst * 1000:>7.0f}ms {size:>10,}  {cpu * 1000:>5.0f}ms CPU"
                print(f"{name:<30} {times}", flush=True)
        print(f"server peak: {peak_rss_mb(server.pid):.0f} MB RSS")
    finally:
        server.terminate()
        server.wait(timeout=10)


def commands(url: str, base: str, head: str, *, diff_only: bool = False) -> None:
    """Wall time and CPU time (user + system, which a loaded machine stretches far less than the wall) of each."""
    with tempfile.TemporaryDirectory() as scratch:
        forget_diffs(url)
        for name, argv in (
            ("niceeval diff (computed)", ["diff", base, head]),
            ("niceeval diff (kept)", ["diff", base, head]),
            *([] if diff_only else [("niceeval report --json", ["report", head, "--json", f"{scratch}/report.json"])]),
        ):
            used = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "niceeval.cli", *argv, "--store", url],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            wall = time.perf_counter() - started
            now = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = now.ru_utime - used.ru_utime + now.ru_stime - used.ru_stime
            print(f"{name:<30} {wall:>7.1f}s wall {cpu:>7.1f}s CPU  exit {done.returncode}  ({load()})", flush=True)
            if done.returncode not in (0, 1):
                print(done.stderr[-2000:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--evals", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=7)
    parser.add_argument("--store", default="/tmp/scalestore/10x100k.db")
    parser.add_argument("--postgres", type=Path, help="a throwaway PostgreSQL cluster with its data in this folder")
    parser.add_argument("--compare-requests", type=int, default=2, help="requests to each compare page (it runs diff)")
    parser.add_argument("--distinct", type=int, help="write K suite runs, copy the rest in SQL")
    parser.add_argument("--fill-only", action="store_true")
    parser.add_argument("--commands-only", action="store_true", help="time `diff` and `report` alone")
    parser.add_argument("--pages-only", action="store_true", help="the pages without compare; no commands")
    parser.add_argument("--compare-only", action="store_true", help="the compare pages and `diff` alone")
    args = parser.parse_args()
    if args.postgres is None:
        measure(args, url_of(args.store))
        return
    with postgres(args.postgres, f"runs{args.runs}x{args.evals}") as url:
        measure(args, url)


def measure(args: argparse.Namespace, url: str) -> None:
    fill(url, args.runs, args.evals, args.distinct)
    if args.fill_only:
        return
    with Store.open(url) as store:
        head, base = (r.id for r in store.runs(limit=2))
    if not args.commands_only:
        pages(
            url, head, args.requests, args.compare_requests, compare=not args.pages_only, others=not args.compare_only
        )
    if not args.pages_only:
        commands(url, base, head, diff_only=args.compare_only)


if __name__ == "__main__":
    main()
