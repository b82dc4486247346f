"""Benchmark (run by hand): the statement a suite run's close keeps its score sums with (`_kept_sums`), alone.

On the latest suite run of a store, in a transaction rolled back after each measure (the store is left as it was):
its kept score rows deleted, then the `INSERT ... SELECT` that keeps them run again (after the statement the
close runs before it, if any: PostgreSQL's JIT turned off). PostgreSQL: under `EXPLAIN
(ANALYZE, BUFFERS)`, the server's execution time, its JIT compilation, the eval runs' rows its scans read (the run's
own, or every run of the store) and its temporary blocks; SQLite: the statement's wall and CPU time. With `--base
DIR` each round measures the statement of another copy of the package first (a folder holding `niceeval/`, e.g.
`git archive BASE niceeval` unpacked), in a process of its own, then this one's.

    python bench/close_scores.py URL [--rounds 5] [--base DIR]

The store is one `store_scale.py` filled (`--postgres DIR` keeps its cluster; start it, or point at a copy).
The load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def measure(url: str) -> dict[str, Any]:
    """One close's score statement on the store's latest suite run, rolled back."""
    from niceeval.store import Store
    from niceeval.store._driver import session_of
    from niceeval.store._kept_sums import _KEEP_SCORES

    with Store.open(url) as store, store.engine.connect() as conn:
        session = session_of(conn)
        run_id = session.execute("SELECT id FROM suite_runs ORDER BY started_at DESC LIMIT 1").fetchone()[0]
        session.execute("DELETE FROM eval_scores WHERE suite_run_id = ?", (run_id,))
        if store.engine.dialect.name == "sqlite":
            used, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            session.execute(_KEEP_SCORES, (run_id, run_id))
            now = resource.getrusage(resource.RUSAGE_SELF)
            cpu = now.ru_utime - used.ru_utime + now.ru_stime - used.ru_stime
            wall = time.perf_counter() - started
            conn.rollback()
            return {"run": run_id, "wall_ms": round(wall * 1000), "cpu_ms": round(cpu * 1000)}
        uncompiled = getattr(session.dialect, "uncompiled", None)  # as `_keep_scores` runs it (a base may not)
        if uncompiled is not None:
            session.execute(uncompiled)
        found = session.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + _KEEP_SCORES, (run_id, run_id))
        plan = found.fetchone()[0][0]
        conn.rollback()
    top = plan["Plan"]
    return {
        "run": run_id,
        "execution_ms": round(plan["Execution Time"]),
        "jit_ms": round(plan.get("JIT", {}).get("Timing", {}).get("Total", 0)),
        "eval_runs_read": _rows_read(top, "eval_runs"),
        "temp_blocks": top["Temp Read Blocks"] + top["Temp Written Blocks"],
    }


def _rows_read(node: dict[str, Any], table: str) -> int:
    """Rows the plan's scans of `table` returned, over all their loops (a hash join's inner scan: all it read)."""
    own = node["Actual Rows"] * node["Actual Loops"] if node.get("Relation Name") == table else 0
    return own + sum(_rows_read(child, table) for child in node.get("Plans", []))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--base", type=Path, help="a folder holding another niceeval/ to measure first")
    parser.add_argument("--once", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.once:
        print(json.dumps(measure(args.url)))
        return
    sides: list[tuple[str, dict[str, str] | None, list[str]]] = []
    if args.base is not None:  # without site (the editable install's finder), this environment's packages on the path
        site = next(p for p in sys.path if p.endswith("site-packages"))
        env = {**os.environ, "PYTHONPATH": f"{args.base.resolve()}{os.pathsep}{site}"}
        sides.append(("before", env, [sys.executable, "-S", __file__, args.url, "--once"]))
    sides.append(("after" if args.base else "this", None, [sys.executable, __file__, args.url, "--once"]))
    print("load average " + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    for _ in range(args.rounds):
        for name, env, command in sides:
            done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
            print(f"{name:7} {done.stdout.strip()}", flush=True)
    print("load average " + " ".join(f"{x:.1f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
