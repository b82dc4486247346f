"""How close a judged suite run by the real `niceeval run` gets to the floor the model latency sets.

Run by hand (pytest does not collect it):

    python bench/judge_suite.py [--evals 1000] [--latency 0.05] [--concurrency 10 64] [--profile]

A generated project holds `--evals` evals; each makes one agent call (`openai_agent` with `MemoryCheckpoints()`
pointed at the server) and one `t.judge.rubric` call on the reply. The server is `niceeval testing serve
--latency L --script judge_suite:script` in its own process, its output going to a file (a pipe nobody reads
would fill up and stall it); the script prints one marker line per request, so the log says how many agent and
judge requests each configuration made.

Per concurrency C, each configuration runs `niceeval run --concurrency C` as a subprocess, timed from outside
(start-up, imports and discovery included):

- `bare loop`: the same 2 x evals calls from a bare `openai.AsyncOpenAI` loop (per eval the agent call, then a
  structured-output call shaped like the judge's, under a semaphore of C), for reference;
- `no cache`: `--no-cache`;
- `cache cold`: the judge cache emptied first (`niceeval cache clear`), so every verdict is asked and stored;
- `cache warm`: the same again: every verdict comes from the cache, zero judge requests.

Columns: wall time; the floor, `2 x evals x latency / C` (two sequential calls per eval; `evals x latency / C`
for `cache warm`, where only the agent calls remain); their ratio; the peak RSS of the measured process (`VmHWM`
from /proc, sampled every 10 ms while it runs: a child's `ru_maxrss` is not usable, as Linux folds the forking
parent's peak into it at exec); the agent and judge requests the server logged; the judge calls and cached
verdicts in the JSON report's summary; the CPU seconds of the measured process (its own rusage, from `wait4`)
and of the server process.

`--profile` also runs the `no cache` configuration at the first concurrency under cProfile and prints the top
functions by own time and by cumulative time.

`--pairs N` measures ratios instead (the issue's yardstick): per concurrency, N rounds, each running the bare loop,
`niceeval run --no-cache` (store on, SQLite) and `niceeval run --no-cache --no-store` back to back, in an order
that rotates from round to round; each niceeval figure is divided by the bare loop's of the same round, and the
table shows the median of those ratios (wall and CPU) with the medians of wall, CPU and peak RSS.
`--before DIR` adds the same two niceeval configurations run from another checkout of niceeval (`PYTHONPATH=DIR`,
e.g. a `git worktree` of the commit before a change), so before and after are measured in one run. `--dataset`
writes one eval over a JSONL dataset of `--evals` cases instead of `--evals` functions; with `--runs N` it is the
memory yardstick at scale (e.g. `--dataset --evals 10000 --runs 3 --pairs 1`; the bare loop makes one pass). Each
configuration runs once untimed first, and with bytecode written (`PYTHONDONTWRITEBYTECODE` unset), as an
installed package runs.

`--instructions` (with `--pairs`) counts instead of timing: each configuration runs under Valgrind's cachegrind
(Debian's `valgrind`), which counts the instructions the measured process executes, and the table shows the
median of their ratios to the bare loop's. On a shared machine a process's wall and CPU time move by 15% from one
run to the next with what the neighbours do; its instruction count moves by about 2% (the event loop's scheduling).
It does not see cache misses or the kernel's work, so it complements the timed figures, and it reads as "how much
work": niceeval under cachegrind runs about 15 times slower, so the store gathers `GATHER_S` x 15 of runs per
transaction, as many runs as a native quarter second holds.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from niceeval.testing import LLMRequest, Reply

HERE = Path(__file__).resolve().parent
RUBRIC = "Is the reply polite and does it answer the question?"
VERDICT = {"reason": "polite and on topic", "pass": True, "score": 0.9}
JUDGE_MARK, AGENT_MARK = "BENCH-JUDGE-REQUEST", "BENCH-AGENT-REQUEST"
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def script(request: LLMRequest) -> Reply:
    """The server's script: judge requests (structured output) get a verdict, agent requests a reply."""
    if request.response_format is not None:
        print(JUDGE_MARK, flush=True)
        return Reply(data=VERDICT)
    print(AGENT_MARK, flush=True)
    return Reply(text=f"Happy to help with: {request.last_user_text}")


BARE_LOOP = """
import asyncio, sys
from openai import AsyncOpenAI

SCHEMA = {"type": "object", "additionalProperties": False, "required": ["reason", "pass", "score"],
          "properties": {"reason": {"type": "string"}, "pass": {"type": "boolean"}, "score": {"type": "number"}}}

async def main(url, evals, concurrency):
    gate = asyncio.Semaphore(concurrency)
    async with AsyncOpenAI(base_url=url, api_key="bench", max_retries=0) as client:
        async def one(i):
            async with gate:
                reply = await client.chat.completions.create(
                    model="scripted", messages=[{"role": "user", "content": f"Where is my order {i}?"}])
                verdict = await client.chat.completions.create(
                    model="judge", messages=[{"role": "user", "content": reply.choices[0].message.content}],
                    response_format={"type": "json_schema",
                                     "json_schema": {"name": "verdict", "strict": True, "schema": SCHEMA}})
                assert verdict.choices[0].message.content
        await asyncio.gather(*(one(i) for i in range(evals)))

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
"""


def write_project(folder: Path, url: str, evals: int, *, dataset: bool = False) -> None:
    """A project of `evals` evals, each one agent call and one rubric judge call (`dataset`: one eval function over
    a JSONL dataset of `evals` cases instead of `evals` functions)."""
    (folder / "evals").mkdir(parents=True)
    (folder / "niceeval.config.py").write_text(
        textwrap.dedent(f"""\
        from niceeval import define_config
        from niceeval.agents import MemoryCheckpoints, ModelAgentOptions, openai_agent

        options = ModelAgentOptions(checkpoints=MemoryCheckpoints())
        config = define_config(
            agent=openai_agent("openai/scripted", base_url="{url}", api_key="bench", options=options),
            judge={{"model": "openai/gpt-4o-mini"}},
            timeout=120,
        )
        """)
    )
    body = ["from niceeval import define_eval", ""]
    if dataset:
        rows = (json.dumps({"question": f"Where is my order {i}?"}) for i in range(evals))
        (folder / "evals" / "cases.jsonl").write_text("\n".join(rows) + "\n")
        body += [
            "@define_eval(cases='cases.jsonl')",
            "async def judged(t):",
            "    await t.send(t.case['question'])",
            f"    t.judge.rubric({RUBRIC!r})",
            "",
        ]
    for i in range(0 if dataset else evals):
        body += [
            "@define_eval",
            f"async def judged_{i}(t):",
            f"    await t.send('Where is my order {i}?')",
            f"    t.judge.rubric({RUBRIC!r})",
            "",
        ]
    (folder / "evals" / "judged.py").write_text("\n".join(body))


@dataclass
class Server:
    """The `niceeval testing serve` process and its log file."""

    process: subprocess.Popen[str]
    log: Path
    url: str
    _read: int = 0

    def counts(self) -> tuple[int, int]:
        """Agent and judge requests logged since the last call."""
        text = self.log.read_text()
        fresh, self._read = text[self._read :], len(text)
        return fresh.count(AGENT_MARK), fresh.count(JUDGE_MARK)

    def cpu_s(self) -> float:
        return _cpu_of(self.process.pid)


def _cpu_of(pid: int) -> float:
    """User + system CPU seconds of a running process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def start_server(latency: float, log: Path) -> Server:
    command = [sys.executable, "-m", "niceeval.cli", "testing", "serve", "--port", "0", "--latency", str(latency)]
    command += ["--script", "judge_suite:script"]
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=HERE, stdout=out, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = re.search(r"base_url=(http://127\.0\.0\.1:\d+/v1)", log.read_text())
        if found:
            return Server(process=process, log=log, url=found.group(1))
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    raise SystemExit(f"the LLM server did not start:\n{log.read_text()[-2000:]}")


@dataclass
class Measured:
    wall_s: float
    peak_rss_mb: float
    cpu_s: float
    returncode: int
    output: str


def measure(command: list[str], cwd: Path, env: dict[str, str]) -> Measured:
    """Run `command` to the end: wall time, peak RSS (`VmHWM`, sampled from /proc) and CPU time (from `wait4`)."""
    with tempfile.TemporaryFile("w+") as out:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
        peak_kb = 0
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            try:
                found = re.search(r"^VmHWM:\s+(\d+) kB", Path(f"/proc/{process.pid}/status").read_text(), re.M)
            except FileNotFoundError:
                found = None
            if found:  # absent once the process is a zombie
                peak_kb = max(peak_kb, int(found.group(1)))
            time.sleep(0.01)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, with its own rusage
        out.seek(0)
        return Measured(wall, peak_kb / 1024, usage.ru_utime + usage.ru_stime, process.returncode, out.read())


_SLOWDOWN = 15
"""About how much slower a process runs under cachegrind (a native quarter second's runs per store batch)."""
_UNDER_CACHEGRIND = (
    "import runpy, sys\n"
    "import niceeval.store._batches as batches\n"
    f"batches.GATHER_S *= {_SLOWDOWN}\n"
    "sys.argv = ['niceeval', *sys.argv[1:]]\n"
    "runpy.run_module('niceeval.cli', run_name='__main__', alter_sys=True)\n"
)


def count_instructions(command: list[str], cwd: Path, env: dict[str, str]) -> Measured:
    """Run `command` under cachegrind: `cpu_s` holds the instructions it executed, in billions."""
    if command[1:3] == ["-m", "niceeval.cli"]:
        command = [command[0], "-c", _UNDER_CACHEGRIND, *command[3:]]
    valgrind = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    done = measure([*valgrind, *command], cwd, env)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.output)
    if found is None:
        raise SystemExit(f"no instruction count in cachegrind's output:\n{done.output[-3000:]}")
    done.cpu_s = int(found.group(1).replace(",", "")) / 1e9
    return done


def niceeval(project: Path, env: dict[str, str], concurrency: int, *flags: str) -> Measured:
    report = project / "report.json"
    command = [sys.executable, "-m", "niceeval.cli", "run", "--concurrency", str(concurrency), *flags]
    done = measure([*command, "--json", str(report)], project, env)
    if done.returncode != 0:
        raise SystemExit(f"niceeval run failed ({done.returncode}):\n{done.output[-3000:]}")
    return done


def judge_summary(project: Path) -> dict[str, Any]:
    spend: dict[str, Any] = json.loads((project / "report.json").read_text())["summary"]["judge_spend"]
    return spend


def clear_cache(project: Path, env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "-m", "niceeval.cli", "cache", "clear"], cwd=project, env=env, check=True, capture_output=True
    )


def profile(project: Path, env: dict[str, str], concurrency: int, top: int = 25) -> None:
    """Run the `no cache` configuration under cProfile and print where the niceeval process spends its time."""
    stats_file = project / "run.prof"
    command = [sys.executable, "-m", "cProfile", "-o", str(stats_file), "-m", "niceeval.cli", "run"]
    command += ["--concurrency", str(concurrency), "--no-cache"]
    done = measure(command, project, env)
    print(f"\nprofiled: concurrency {concurrency}, no cache, wall {done.wall_s:.2f}s (under cProfile)")
    for order in ("tottime", "cumulative"):
        print(f"\n-- top {top} by {order}")
        stats = pstats.Stats(str(stats_file))
        stats.strip_dirs().sort_stats(order).print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[10, 64])
    parser.add_argument("--profile", action="store_true", help="also profile the first concurrency under cProfile")
    parser.add_argument("--pairs", type=int, default=0, help="measure ratios to the bare loop over N rounds")
    parser.add_argument("--before", type=Path, help="with --pairs: also run niceeval from this checkout")
    parser.add_argument("--dataset", action="store_true", help="one eval over a dataset of --evals cases")
    parser.add_argument("--runs", type=int, default=1, help="with --pairs: niceeval run --runs N (memory at scale)")
    parser.add_argument("--instructions", action="store_true", help="with --pairs: count instructions (cachegrind)")
    args = parser.parse_args()
    if args.instructions and not args.pairs:
        parser.error("--instructions counts the --pairs configurations; add --pairs N")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        server = start_server(args.latency, folder / "server.log")
        try:
            project = folder / "project"
            write_project(project, server.url, args.evals, dataset=args.dataset)
            env = {**os.environ, "OPENAI_API_KEY": "bench", "OPENAI_BASE_URL": server.url}
            if args.pairs:
                paired(args, server, project, env)
                return
            rows = []
            for concurrency in args.concurrency:
                floor = 2 * args.evals * args.latency / concurrency
                bare_command = [sys.executable, "-c", BARE_LOOP, server.url, str(args.evals), str(concurrency)]
                runs: list[tuple[str, tuple[str, ...]]] = [
                    ("no cache", ("--no-cache",)),
                    ("cache cold", ()),
                    ("cache warm", ()),
                ]
                server.counts()
                before = server.cpu_s()
                bare = measure(bare_command, project, env)
                if bare.returncode != 0:
                    raise SystemExit(f"the bare loop failed:\n{bare.output[-3000:]}")
                rows.append((concurrency, "bare loop", floor, bare, server.counts(), None, server.cpu_s() - before))
                for name, flags in runs:
                    if name == "cache cold":
                        clear_cache(project, env)
                    server.counts()
                    before = server.cpu_s()
                    done = niceeval(project, env, concurrency, *flags)
                    requests, spent = server.counts(), judge_summary(project)
                    shown_floor = floor / 2 if name == "cache warm" else floor
                    rows.append((concurrency, name, shown_floor, done, requests, spent, server.cpu_s() - before))
            print_table(args, rows)
            if args.profile:
                profile(project, env, args.concurrency[0])
        finally:
            server.process.terminate()
            server.process.wait(timeout=10)


def paired(args: argparse.Namespace, server: Server, project: Path, env: dict[str, str]) -> None:
    """`--pairs`: per concurrency, rounds of bare loop and niceeval configurations; medians of ratios."""
    env = {name: value for name, value in env.items() if name != "PYTHONDONTWRITEBYTECODE"}  # as installed: .pyc
    checkouts: list[tuple[str, dict[str, str]]] = [("", env)]
    if args.before is not None:
        before_store = str(project / ".niceeval" / "before.db")  # its own: the schemas may differ
        checkouts.append(("before ", {**env, "PYTHONPATH": str(args.before.resolve()), "NICEEVAL_STORE": before_store}))
    run = count_instructions if args.instructions else measure
    print(
        f"{args.evals} evals x (1 agent call + 1 rubric judge call), server latency {args.latency}s, "
        f"{os.cpu_count()} CPUs, {args.pairs} rounds, medians"
    )
    if args.instructions:
        print(f"{'conc':>4} {'configuration':28} {'instructions (billions)':>24} {'ratio':>7} {'range':>13}")
    else:
        head = f"{'wall s':>7} {'cpu s':>7} {'RSS MB':>7} {'wall/bare':>9} {'cpu/bare':>9}"
        print(f"{'conc':>4} {'configuration':28} {head}")
    for concurrency in args.concurrency:
        bare_command = [sys.executable, "-c", BARE_LOOP, server.url, str(args.evals), str(concurrency)]
        command = [sys.executable, "-m", "niceeval.cli", "run", "--concurrency", str(concurrency), "--no-cache"]
        command += ["--runs", str(args.runs)] if args.runs > 1 else []
        configs: list[tuple[str, list[str], dict[str, str]]] = [("bare loop", bare_command, env)]
        for label, checkout_env in checkouts:
            configs.append((f"{label}niceeval", command, checkout_env))
            configs.append((f"{label}niceeval --no-store", [*command, "--no-store"], checkout_env))
        done: dict[str, list[Measured]] = {name: [] for name, _, _ in configs}
        for _, argv, config_env in configs:  # untimed: bytecode written, caches warm
            measure(argv, project, config_env)
        for round_ in range(args.pairs):
            shift = round_ % len(configs)
            for name, argv, config_env in configs[shift:] + configs[:shift]:
                measured = run(argv, project, config_env)
                if measured.returncode not in (0, 1):
                    raise SystemExit(f"{name} failed ({measured.returncode}):\n{measured.output[-3000:]}")
                done[name].append(measured)
        bare = done["bare loop"]
        if args.instructions:
            print_counts(concurrency, done, [label for label, _ in checkouts])
            continue
        for name, runs in done.items():
            wall = statistics.median(r.wall_s / b.wall_s for r, b in zip(runs, bare, strict=True))
            cpu = statistics.median(r.cpu_s / b.cpu_s for r, b in zip(runs, bare, strict=True))
            fields = ("wall_s", "cpu_s", "peak_rss_mb")
            w, c, rss = (statistics.median(getattr(r, field) for r in runs) for field in fields)
            print(f"{concurrency:>4} {name:28} {w:7.2f} {c:7.2f} {rss:7.0f} {wall:9.3f} {cpu:9.3f}")


def print_counts(concurrency: int, done: dict[str, list[Measured]], labels: list[str]) -> None:
    """`--instructions`: each configuration's count over the bare loop's, and the store on over off, per round."""
    bare = done["bare loop"]
    rows = [(name, runs, bare) for name, runs in done.items()]
    rows += [
        (f"{label}store on / off", done[f"{label}niceeval"], done[f"{label}niceeval --no-store"]) for label in labels
    ]
    for name, runs, base in rows:
        ratios = sorted(r.cpu_s / b.cpu_s for r, b in zip(runs, base, strict=True))
        counted = f"{statistics.median(r.cpu_s for r in runs):.2f}" if base is bare else ""
        spread = f"{ratios[0]:.3f}-{ratios[-1]:.3f}"
        print(f"{concurrency:>4} {name:28} {counted:>24} {statistics.median(ratios):7.3f} {spread:>13}")


def print_table(args: argparse.Namespace, rows: list[tuple[Any, ...]]) -> None:
    print(
        f"{args.evals} evals x (1 agent call + 1 rubric judge call), server latency {args.latency}s, "
        f"{os.cpu_count()} CPUs"
    )
    columns = ("wall s", "floor s", "ratio", "RSS MB", "agent", "judge", "j.calls", "j.cached", "cpu s", "srv cpu")
    print(f"{'conc':>4} {'configuration':12} " + " ".join(f"{c:>8}" for c in columns))
    for concurrency, name, floor, done, (agent, judge), spent, server_cpu in rows:
        calls = "-" if spent is None else str(spent["calls"])
        cached = "-" if spent is None else str(spent["cached"])
        print(
            f"{concurrency:>4} {name:12} {done.wall_s:8.2f} {floor:8.2f} {done.wall_s / floor:8.2f} "
            f"{done.peak_rss_mb:8.0f} {agent:8d} {judge:8d} {calls:>8} {cached:>8} {done.cpu_s:8.1f} {server_cpu:8.1f}"
        )


if __name__ == "__main__":
    main()
