"""10,000 cases side by side: niceeval, promptfoo, Inspect and pydantic-evals against a bare `openai` loop.

Run by hand (pytest does not collect it):

    npm install promptfoo                      # into a scratch dir; the harness takes its bin
    python -m venv SCRATCH/pe && SCRATCH/pe/bin/pip install pydantic-evals openai
    python bench/peers_10k.py [--cases 10000] [--latency 0.05] [--concurrency 64] [--rounds 1] \\
        [--promptfoo SCRATCH/node_modules/.bin/promptfoo] [--pydantic-evals-python SCRATCH/pe/bin/python]

One dataset of `--cases` questions (a JSONL, ~40-byte rows); each tool makes one agent call per case (a chat
completion to `niceeval testing serve --latency L`, one server process for every tool, its output going to a file)
and one cheap check on the reply (the reply contains "Happy to help"), each in its own idiom:

- `bare loop`: an `openai.AsyncOpenAI` loop under a semaphore of C, the yardstick;
- `niceeval`: `niceeval run --concurrency C --no-cache --json report.json`, store on (SQLite), one eval over the
  JSONL (`cases=`), `openai_agent` with `MemoryCheckpoints()`, `t.check(t.reply, includes(...))`;
- `promptfoo`: `promptfoo eval -j C --no-cache -o out.json` (its results database on, in a scratch config dir;
  telemetry and update checks off), the OpenAI provider pointed at the server, tests from a CSV of the same rows,
  a `contains` assertion;
- `Inspect`: `inspect eval task.py --max-connections C` (its log written), `json_dataset` of the JSONL,
  `generate()`, `includes()`;
- `pydantic-evals`: `Dataset.evaluate(task, max_concurrency=C)` with a `Contains` evaluator, the task calling
  the server through `openai.AsyncOpenAI` (pydantic-evals runs a function; it has no model client of its own), in
  its own interpreter (`--pydantic-evals-python`: its pydantic-ai pin differs from ours).

A peer not given (no `--promptfoo`, no `--pydantic-evals-python`) is left out and named. Each tool runs once on
100 cases untimed first (bytecode written, caches warm), then `--rounds` rounds, the order rotating each round.
Each is a subprocess timed from outside (start-up, imports and the dataset's reading included). Columns: wall
time, wall over the bare loop's in the same round (median of the rounds), the CPU seconds of the process tree
(from `wait4`: the children a tool reaps count), and the peak RSS of the process tree (the sum of `VmRSS` over the
process and its descendants, sampled every 20 ms: promptfoo is Node with worker processes), and the chat requests
the server logged (each tool must make exactly `--cases`) with the passes the tool reported.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from niceeval.testing import LLMRequest, Reply

HERE = Path(__file__).resolve().parent
MARK, EXPECTED = "PEERS-10K-REQUEST", "Happy to help"
WARM_UP = 100


def script(request: LLMRequest) -> Reply:
    """The server's script: one marker line per request, and a reply every tool's check passes."""
    print(MARK, flush=True)
    return Reply(text=f"{EXPECTED} with: {request.last_user_text}")


BARE_LOOP = """
import asyncio, json, sys
from openai import AsyncOpenAI

async def main(url, path, concurrency):
    gate = asyncio.Semaphore(concurrency)
    with open(path) as rows:
        questions = [json.loads(line)["question"] for line in rows]
    async with AsyncOpenAI(base_url=url, api_key="bench", max_retries=0) as client:
        async def one(question):
            async with gate:
                reply = await client.chat.completions.create(
                    model="scripted", messages=[{"role": "user", "content": question}])
                return "Happy to help" in reply.choices[0].message.content
        passed = await asyncio.gather(*(one(q) for q in questions))
    print(f"passed {sum(passed)}")

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""

NICEEVAL_CONFIG = """\
from niceeval import define_config
from niceeval.agents import MemoryCheckpoints, ModelAgentOptions, openai_agent

options = ModelAgentOptions(checkpoints=MemoryCheckpoints())
config = define_config(
    agent=openai_agent("openai/scripted", base_url="{url}", api_key="bench", options=options),
    timeout=120,
)
"""

NICEEVAL_EVAL = f"""\
from niceeval import define_eval
from niceeval.expect import includes


@define_eval(cases="cases.jsonl")
async def asked(t):
    await t.send(t.case["question"])
    t.check(t.reply, includes({EXPECTED!r}))
"""

PROMPTFOO_CONFIG = f"""\
prompts:
  - "{{{{question}}}}"
providers:
  - id: openai:chat:scripted
    config:
      apiBaseUrl: "{{url}}"
      apiKey: bench
tests: file://cases.csv
defaultTest:
  assert:
    - type: contains
      value: "{EXPECTED}"
"""

INSPECT_TASK = """\
from inspect_ai import Task, task
from inspect_ai.dataset import FieldSpec, json_dataset
from inspect_ai.scorer import includes
from inspect_ai.solver import generate


@task
def asked():
    dataset = json_dataset("cases.jsonl", FieldSpec(input="question", target="target", id="id"))
    return Task(dataset=dataset, solver=generate(), scorer=includes())
"""

PYDANTIC_EVALS = """
import asyncio, json, sys
from openai import AsyncOpenAI
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import Contains

url, path, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3])

async def main():
    with open(path) as rows:
        cases = [Case(name=row["id"], inputs=row["question"]) for row in map(json.loads, rows)]
    dataset = Dataset(name="peers_10k", cases=cases, evaluators=[Contains(value="Happy to help")])
    async with AsyncOpenAI(base_url=url, api_key="bench", max_retries=0) as client:
        async def task(question: str) -> str:
            reply = await client.chat.completions.create(
                model="scripted", messages=[{"role": "user", "content": question}])
            return reply.choices[0].message.content
        report = await dataset.evaluate(task, max_concurrency=concurrency, progress=False)
    passed = sum(all(r.value for r in case.assertions.values()) for case in report.cases)
    print(f"passed {passed} failed {len(report.failures)}")

asyncio.run(main())
"""


@dataclass
class Measured:
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    returncode: int
    output: str


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants (from /proc's `children` lists)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            tasks = Path(f"/proc/{current}/task").iterdir()
            for task in tasks:
                todo += [int(child) for child in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return found


def _rss_kb(pid: int) -> int:
    try:
        found = re.search(r"^VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    except (FileNotFoundError, ProcessLookupError):
        return 0
    return int(found.group(1)) if found else 0


def measure(command: list[str], cwd: Path, env: dict[str, str]) -> Measured:
    """Run `command` to the end: wall time, the tree's CPU (from `wait4`) and its peak summed RSS (sampled)."""
    with tempfile.TemporaryFile("w+") as out:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
        peak_kb = 0
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            peak_kb = max(peak_kb, sum(_rss_kb(p) for p in _tree(process.pid)))
            time.sleep(0.02)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        cpu = usage.ru_utime + usage.ru_stime
        return Measured(wall, cpu, peak_kb / 1024, process.returncode, out.read())


@dataclass
class Server:
    process: subprocess.Popen[str]
    log: Path
    url: str
    _read: int = 0

    def requests(self) -> int:
        """Chat requests logged since the last call."""
        text = self.log.read_text()
        fresh, self._read = text[self._read :], len(text)
        return fresh.count(MARK)


def start_server(latency: float, log: Path) -> Server:
    command = [sys.executable, "-m", "niceeval.cli", "testing", "serve", "--port", "0", "--latency", str(latency)]
    with log.open("w") as out:
        process = subprocess.Popen(
            [*command, "--script", "peers_10k:script"], cwd=HERE, stdout=out, stderr=subprocess.STDOUT, text=True
        )
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


def write_cases(folder: Path, cases: int) -> None:
    """The same rows as JSONL (niceeval, Inspect, pydantic-evals, the bare loop) and CSV (promptfoo)."""
    folder.mkdir(parents=True)
    rows = [{"id": f"q{i}", "question": f"Where is my order {i}?", "target": EXPECTED} for i in range(cases)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    with (folder / "cases.csv").open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["question"])
        writer.writerows([row["question"]] for row in rows)


@dataclass
class Tool:
    name: str
    command: list[str]
    cwd: Path
    env: dict[str, str]
    passed: Callable[[Path, str], int]
    """The passes the tool reported: from its folder and its output."""


def _printed_passes(_folder: Path, output: str) -> int:
    found = re.search(r"^passed (\d+)", output, re.M)
    return int(found.group(1)) if found else -1


def _niceeval_passes(folder: Path, _output: str) -> int:
    summary = json.loads((folder / "report.json").read_text())["summary"]
    return int(summary["passed"])


def _promptfoo_passes(folder: Path, _output: str) -> int:
    stats = json.loads((folder / "out.json").read_text())["results"]["stats"]
    return int(stats["successes"])


def _inspect_passes(folder: Path, output: str) -> int:
    found = re.search(r"accuracy\s*[:=]?\s*([\d.]+)", output)
    return round(float(found.group(1)) * _cases_in(folder)) if found else -1


def _cases_in(folder: Path) -> int:
    with (folder / "cases.jsonl").open() as rows:
        return sum(1 for _ in rows)


def tools(args: argparse.Namespace, root: Path, url: str, cases: int) -> list[Tool]:
    """Each tool's folder (the dataset, its config) and command, for `cases` cases."""
    env = {
        **os.environ,
        "OPENAI_API_KEY": "bench",
        "OPENAI_BASE_URL": url,
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_CONFIG_DIR": str(root / "promptfoo-home"),
        "INSPECT_DISPLAY": "plain",
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    c = str(args.concurrency)
    made: list[Tool] = []
    folder = root / f"bare-{cases}"
    write_cases(folder, cases)
    bare = [sys.executable, "-c", BARE_LOOP, url, "cases.jsonl", c]
    made.append(Tool("bare loop", bare, folder, env, _printed_passes))

    folder = root / f"niceeval-{cases}"
    write_cases(folder / "evals", cases)
    (folder / "niceeval.config.py").write_text(NICEEVAL_CONFIG.replace("{url}", url))
    (folder / "evals" / "asked.py").write_text(NICEEVAL_EVAL)
    command = [sys.executable, "-m", "niceeval.cli", "run", "--concurrency", c, "--no-cache", "--json", "report.json"]
    made.append(Tool("niceeval", command, folder, env, _niceeval_passes))

    if args.promptfoo is not None:
        folder = root / f"promptfoo-{cases}"
        write_cases(folder, cases)
        (folder / "promptfooconfig.yaml").write_text(PROMPTFOO_CONFIG.replace("{url}", url))
        command = [str(args.promptfoo.resolve()), "eval", "-c", "promptfooconfig.yaml", "-j", c, "--no-cache"]
        command += ["--no-table", "--no-progress-bar", "-o", "out.json"]
        made.append(Tool("promptfoo", command, folder, env, _promptfoo_passes))

    folder = root / f"inspect-{cases}"
    write_cases(folder, cases)
    (folder / "task.py").write_text(INSPECT_TASK)
    inspect = str(Path(sys.executable).with_name("inspect"))
    command = [inspect, "eval", "task.py", "--model", "openai/scripted", "--model-base-url", url]
    command += ["--max-connections", c, "--log-dir", "logs", "--display", "plain"]
    made.append(Tool("Inspect", command, folder, env, _inspect_passes))

    if args.pydantic_evals_python is not None:
        folder = root / f"pydantic-evals-{cases}"
        write_cases(folder, cases)
        command = [str(args.pydantic_evals_python), "-c", PYDANTIC_EVALS, url, "cases.jsonl", c]
        made.append(Tool("pydantic-evals", command, folder, env, _printed_passes))
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--promptfoo", type=Path, help="promptfoo's bin (node_modules/.bin/promptfoo)")
    parser.add_argument("--pydantic-evals-python", type=Path, help="a Python with pydantic-evals and openai")
    args = parser.parse_args()
    peers = (("promptfoo", args.promptfoo), ("pydantic-evals", args.pydantic_evals_python))
    missing = [name for name, given in peers if given is None]
    with tempfile.TemporaryDirectory(prefix="peers-10k-") as tmp:
        root = Path(tmp)
        server = start_server(args.latency, root / "server.log")
        try:
            for tool in tools(args, root, server.url, WARM_UP):
                done = measure(tool.command, tool.cwd, tool.env)
                if done.returncode not in (0, 1) or tool.passed(tool.cwd, done.output) != WARM_UP:
                    raise SystemExit(f"{tool.name} failed its warm-up ({done.returncode}):\n{done.output[-3000:]}")
            server.requests()
            measured = rounds(args, tools(args, root, server.url, args.cases), server)
        finally:
            server.process.terminate()
            server.process.wait(timeout=10)
    floor = args.cases * args.latency / args.concurrency
    print(
        f"{args.cases} cases x (1 agent call + 1 cheap check), server latency {args.latency}s, concurrency "
        f"{args.concurrency} (floor {floor:.1f} s), {os.cpu_count()} CPUs, {args.rounds} round(s), medians; "
        f"load average before {measured.load_before}, after {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    if missing:
        print(f"left out (not given): {', '.join(missing)}")
    print(f"{'tool':16} {'wall s':>8} {'x bare':>7} {'cpu s':>7} {'RSS MB':>7} {'requests':>9} {'passed':>7}")
    bare = measured.runs["bare loop"]
    for name, runs in measured.runs.items():
        ratio = statistics.median(r.wall_s / b.wall_s for (r, _, _), (b, _, _) in zip(runs, bare, strict=True))
        fields = ("wall_s", "cpu_s", "peak_rss_mb")
        wall, cpu, rss = (statistics.median(getattr(r, field) for r, _, _ in runs) for field in fields)
        requests, passed = runs[-1][1], runs[-1][2]
        print(f"{name:16} {wall:8.1f} {ratio:7.2f} {cpu:7.1f} {rss:7.0f} {requests:9d} {passed:7d}")


@dataclass
class Rounds:
    runs: dict[str, list[tuple[Measured, int, int]]]
    load_before: str


def rounds(args: argparse.Namespace, made: list[Tool], server: Server) -> Rounds:
    """`--rounds` rounds of every tool, the order rotating; per run its measure, requests and passes."""
    load_before = " ".join(f"{x:.1f}" for x in os.getloadavg())
    runs: dict[str, list[tuple[Measured, int, int]]] = {tool.name: [] for tool in made}
    for round_ in range(args.rounds):
        shift = round_ % len(made)
        for tool in made[shift:] + made[:shift]:
            done = measure(tool.command, tool.cwd, tool.env)
            requests = server.requests()
            if done.returncode not in (0, 1):
                raise SystemExit(f"{tool.name} failed ({done.returncode}):\n{done.output[-3000:]}")
            runs[tool.name].append((done, requests, tool.passed(tool.cwd, done.output)))
            print(f"  round {round_ + 1}: {tool.name} {done.wall_s:.1f} s", file=sys.stderr, flush=True)
    return Rounds(runs, load_before)


if __name__ == "__main__":
    main()
