"""How much the framework itself costs: per assertion, in memory per eval, and at start-up.

Run by hand (pytest does not collect it): `python bench/core_overhead.py [--quick] [--profile]`.

1. Time per assertion: 10,000 trivial async evals x 5 assertions (includes, includes(regex), equals, similarity,
   satisfies) through the real runner `run_suite`, minus the same evals with no assertion; with no reporter and
   with the JSON reporter on. Target <= 20 us per assertion.
2. Peak memory (ru_maxrss of a fresh interpreter) for 1,000 / 10,000 / 20,000 evals, JSON and JUnit reporters on:
   the runner streams results, so the peak should not grow with the number of evals beyond the evals themselves.
3. `niceeval run` of a one-eval project as a subprocess (median of 5), and the heaviest imports of `--help`.
   Target <= 0.4 s.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions
from niceeval._run.suite import SuiteOptions, run_suite
from niceeval.expect import equals, includes, satisfies, similarity
from niceeval.report import JsonReporter, JUnitReporter, Reporter

ASSERTIONS_PER_EVAL = 5
REPLY = "I'm sorry about order #1234. Your refund is on its way and should arrive within 5 business days."
ORDER = re.compile(r"order #?\d+")
DATA = {"intent": "refund", "order_id": "1234", "items": [1, 2, 3]}


async def five_assertions(t: Any) -> None:
    t.check(REPLY, includes("refund"))
    t.check(REPLY, includes(ORDER))
    t.check(DATA, equals({"intent": "refund", "order_id": "1234", "items": [1, 2, 3]}))
    t.check(REPLY, similarity("I'm sorry about order #1234. Your refund is on its way.").at_least(0.4))
    t.check(REPLY, satisfies(lambda text: len(text) < 200, "reply under 200 chars"))


async def no_assertions(t: Any) -> None:
    return None


def make_entries(count: int, fn: Callable[[Any], Any]) -> list[EvalEntry]:
    """`count` evals sharing one function (as a generated module of `count` evals would, minus the imports)."""
    file = Path(__file__).resolve()
    return [
        EvalEntry(
            id=f"bench/core_overhead.py::eval_{i}",
            spec=EvalSpec(fn=fn, name=f"eval_{i}", file=file, line=i + 1, is_async=True),
        )
        for i in range(count)
    ]


def suite_options(concurrency: int = 8) -> SuiteOptions:
    return SuiteOptions(runs=1, concurrency=concurrency, exec=ExecOptions(timeout=300.0))


def reporters_for(kind: str, folder: Path) -> list[Reporter]:
    if kind == "none":
        return []
    if kind == "json":
        return [JsonReporter(folder / "report.json")]
    return [JsonReporter(folder / "report.json"), JUnitReporter(folder / "report.xml")]


def time_suite(entries: Sequence[EvalEntry], reporter_kind: str) -> float:
    with tempfile.TemporaryDirectory() as folder:
        reporters = reporters_for(reporter_kind, Path(folder))
        gc.collect()
        start = time.perf_counter()
        summary = anyio.run(run_suite, entries, [], suite_options(), reporters)
        wall = time.perf_counter() - start
    assert summary.exit_code == 0, "the bench evals must pass"
    return wall


def per_assertion(count: int, repeats: int) -> list[dict[str, Any]]:
    with_checks, without = make_entries(count, five_assertions), make_entries(count, no_assertions)
    time_suite(make_entries(200, five_assertions), "json")  # warm up: imports, regex and adapter caches
    rows = []
    for kind in ("none", "json"):
        full = min(time_suite(with_checks, kind) for _ in range(repeats))
        base = min(time_suite(without, kind) for _ in range(repeats))
        rows.append(
            {
                "reporters": kind,
                "evals": count,
                "wall_s": full,
                "baseline_s": base,
                "us_per_assertion": (full - base) / (count * ASSERTIONS_PER_EVAL) * 1e6,
                "us_per_run": full / count * 1e6,
                "us_per_empty_run": base / count * 1e6,
            }
        )
    return rows


def profile(count: int, kind: str, top: int) -> str:
    entries = make_entries(count, five_assertions)
    profiler = cProfile.Profile()
    with tempfile.TemporaryDirectory() as folder:
        reporters = reporters_for(kind, Path(folder))
        profiler.enable()
        anyio.run(run_suite, entries, [], suite_options(), reporters)
        profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


# --- memory: one fresh interpreter per size -------------------------------------------------------------------


def _proc_status_kib(field: str) -> int:
    """A `/proc/self/status` figure in KiB (Linux): VmRSS now, VmHWM the peak of this process image."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


class _RssAtStart:
    """A reporter that notes the RSS once the suite is planned (per-eval tallies made), before any run."""

    rss_kib = 0

    def start(self, plan: Sequence[Any], problems: Sequence[Any]) -> None:
        self.rss_kib = _proc_status_kib("VmRSS")

    def run_finished(self, result: Any) -> None:
        return None

    def finish(self, summary: Any) -> None:
        return None


def _memory_child(count: int, kind: str) -> None:
    entries = make_entries(count, five_assertions)
    gc.collect()
    built = _proc_status_kib("VmRSS")
    probe = _RssAtStart()
    with tempfile.TemporaryDirectory() as folder:
        reporters = [*reporters_for(kind, Path(folder)), probe]
        summary = anyio.run(run_suite, entries, [], suite_options(), reporters)
    assert summary.exit_code == 0
    print(
        json.dumps(
            {
                "evals": count,
                "built_kib": built,
                "start_kib": probe.rss_kib,
                "peak_kib": _proc_status_kib("VmHWM"),
                "ru_maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
            }
        )
    )


def memory(sizes: Sequence[int], kind: str) -> list[dict[str, Any]]:
    rows = []
    for count in sizes:
        out = subprocess.run(
            [sys.executable, __file__, "--memory-child", str(count), kind],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
    return rows


# --- start-up: the real command on a one-eval project ---------------------------------------------------------

ONE_EVAL = """\
from niceeval import define_eval
from niceeval.expect import includes


@define_eval
async def greets(t):
    await t.send("hello")
    t.check(t.reply, includes("hello"))
"""

CONFIG = """\
from niceeval import define_config


def echo(message):
    return "echo: " + message


config = define_config(agent=echo)
"""


def one_eval_wall(repeats: int) -> tuple[list[float], list[float]]:
    """Wall and CPU (user + sys) seconds of `niceeval run` on a one-eval project; CPU is steadier on a busy box."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "evals").mkdir()
        (root / "evals" / "one.py").write_text(ONE_EVAL)
        (root / "niceeval.config.py").write_text(CONFIG)
        walls, cpus = [], []
        for _ in range(repeats + 1):  # the first warms the OS file cache and writes the bytecode
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "niceeval.cli", "run"], cwd=root, capture_output=True, text=True
            )
            walls.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            assert proc.returncode == 0, proc.stdout + proc.stderr
        return walls[1:], cpus[1:]


def python_startup(repeats: int) -> float:
    walls = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        walls.append(time.perf_counter() - start)
    return statistics.median(walls)


def import_costs(args: Sequence[str], top: int, cwd: Path | None = None) -> list[tuple[int, str]]:
    """(cumulative us, module) of the costliest top-level imports of `python -X importtime -m niceeval.cli ARGS`."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "niceeval.cli", *args], capture_output=True, text=True, cwd=cwd
    )
    costs: dict[str, int] = {}
    for line in proc.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if match and len(match.group(2)) <= 2:  # top-level imports only (nested ones are inside them)
            costs[match.group(3)] = int(match.group(1))
    return sorted(((us, name) for name, us in costs.items()), reverse=True)[:top]


# --- report ---------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="1,000 evals and fewer repeats (a smoke run)")
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of the 5-assertion suite")
    parser.add_argument("--memory-child", nargs=2, metavar=("COUNT", "REPORTERS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        _memory_child(int(args.memory_child[0]), args.memory_child[1])
        return

    count, repeats = (1_000, 1) if args.quick else (10_000, 3)
    print(f"niceeval core overhead · python {sys.version.split()[0]} · {os.cpu_count()} CPUs\n")

    print(f"1. per assertion: {count:,} async evals x {ASSERTIONS_PER_EVAL} assertions (best of {repeats})")
    print(f"   {'reporters':<10}{'wall s':>9}{'0-assert s':>12}{'us/assert':>11}{'us/run':>9}{'us/empty run':>14}")
    for row in per_assertion(count, repeats):
        print(
            f"   {row['reporters']:<10}{row['wall_s']:>9.3f}{row['baseline_s']:>12.3f}"
            f"{row['us_per_assertion']:>11.1f}{row['us_per_run']:>9.0f}{row['us_per_empty_run']:>14.0f}"
        )
    print("   target: <= 20 us per assertion\n")

    print("2. memory (a fresh interpreter per size, JSON + JUnit reporters on; MiB)")
    header = f"{'evals':>7}{'evals built':>13}{'suite planned':>15}{'peak (VmHWM)':>14}{'runs add':>10}"
    header += f"{'ru_maxrss':>11}"
    print("   " + header)
    rows = memory((1_000, 5_000) if args.quick else (1_000, 10_000, 20_000), "all")
    for row in rows:
        print(
            f"   {row['evals']:>7,}{row['built_kib'] / 1024:>13.1f}{row['start_kib'] / 1024:>15.1f}"
            f"{row['peak_kib'] / 1024:>14.1f}{(row['peak_kib'] - row['start_kib']) / 1024:>10.1f}"
            f"{row['ru_maxrss_kib'] / 1024:>11.1f}"
        )
    first, last = rows[0], rows[-1]
    extra = last["evals"] - first["evals"]
    evals_cost = (last["built_kib"] - first["built_kib"]) * 1024 / extra
    plan_cost = ((last["start_kib"] - last["built_kib"]) - (first["start_kib"] - first["built_kib"])) * 1024 / extra
    print(f"   per extra eval: {evals_cost:,.0f} B for the eval objects, {plan_cost:,.0f} B for the plan and tallies;")
    print("   `runs add` (peak minus planned) is what executing and reporting the runs costs.")
    print("   (ru_maxrss keeps the parent's size across fork+exec on Linux, so VmHWM is the figure to read)\n")

    walls, cpus = one_eval_wall(5)
    print("3. `niceeval run` on a one-eval project (subprocess, median of 5)")
    print(f"   wall median {statistics.median(walls):.3f} s  (min {min(walls):.3f}, max {max(walls):.3f})")
    print(f"   CPU (user+sys) median {statistics.median(cpus):.3f} s")
    print(f"   bare `python -c pass`: {python_startup(5):.3f} s")
    print("   target: <= 0.4 s")
    print("   heaviest top-level imports of `niceeval --help` (cumulative ms):")
    for us, name in import_costs(["--help"], 6):
        print(f"     {us / 1000:7.1f}  {name}")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "evals").mkdir()
        (root / "evals" / "one.py").write_text(ONE_EVAL)
        (root / "niceeval.config.py").write_text(CONFIG)
        print("   heaviest top-level imports of `niceeval run` (one eval):")
        for us, name in import_costs(["run"], 8, cwd=root):
            print(f"     {us / 1000:7.1f}  {name}")

    if args.profile:
        print("\n4. cProfile of the 5-assertion suite, JSON reporter on (top by own time)")
        print(textwrap.indent(profile(count, "json", 25), "   "))


if __name__ == "__main__":
    main()
