"""Benchmark (run by hand): N evals, each one `openai_agent` call to the local LLM server with fixed latency.

Compares whole-process wall time of `niceeval run` with the floor (calls x latency / concurrency) and with a
bare `openai` AsyncOpenAI loop doing the same calls (process start included), at each concurrency.

    python bench/agent_calls.py [--evals 1000] [--latency 0.05] [--concurrency 10 64]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

BARE_LOOP = """
import asyncio, sys
from openai import AsyncOpenAI

async def main(url, calls, concurrency):
    gate = asyncio.Semaphore(concurrency)
    async with AsyncOpenAI(base_url=url, api_key="bench", max_retries=0) as client:
        async def one(i):
            async with gate:
                r = await client.chat.completions.create(
                    model="scripted", messages=[{"role": "user", "content": f"hello {i}"}])
                assert r.choices[0].message.content
        await asyncio.gather(*(one(i) for i in range(calls)))

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
"""


def _project(folder: Path, url: str, evals: int) -> None:
    (folder / "evals").mkdir()
    (folder / "niceeval.config.py").write_text(
        textwrap.dedent(f"""
        from niceeval import define_config
        from niceeval.agents import MemoryCheckpoints, ModelAgentOptions, openai_agent

        config = define_config(
            agent=openai_agent(model="openai/scripted", base_url="{url}", api_key="bench",
                               options=ModelAgentOptions(checkpoints=MemoryCheckpoints())),
            timeout=60,
        )
        """)
    )
    body = ["from niceeval import define_eval", "from niceeval.expect import includes", ""]
    for i in range(evals):
        body += [
            "@define_eval",
            f"async def call_{i}(t):",
            f"    await t.send('hello {i}')",
            f"    t.check(t.reply, includes('hello {i}'))",
            "",
        ]
    (folder / "evals" / "calls.py").write_text("\n".join(body))


def _timed(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{command[:4]} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--evals", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[10, 64])
    args = parser.parse_args()
    # The server logs every request: to a file, since a pipe nobody reads would fill up and stall it.
    log = tempfile.NamedTemporaryFile("w+", suffix=".log")
    server = subprocess.Popen(
        [sys.executable, "-m", "niceeval.cli", "testing", "serve", "--port", "0", "--latency", str(args.latency)],
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = ""
        while not url:
            time.sleep(0.1)
            found = re.search(r"base_url=(http://127\.0\.0\.1:\d+/v1)", Path(log.name).read_text())
            url = found.group(1) if found else ""
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            _project(folder, url, args.evals)
            print(f"{args.evals} evals, one agent call each, server latency {args.latency}s")
            header = ("concurrency", "floor s", "bare s", "bare/floor", "niceeval s", "ne/floor")
            print(" ".join(f"{h:>11}" for h in header))
            for concurrency in args.concurrency:
                floor = args.evals * args.latency / concurrency
                bare = _timed([sys.executable, "-c", BARE_LOOP, url, str(args.evals), str(concurrency)], folder)
                ours = _timed([sys.executable, "-m", "niceeval.cli", "run", "--concurrency", str(concurrency)], folder)
                row = (floor, bare, bare / floor, ours, ours / floor)
                print(f"{concurrency:>11} " + " ".join(f"{v:>11.2f}" for v in row))
    finally:
        server.terminate()
        server.wait(timeout=10)
        log.close()


if __name__ == "__main__":
    main()
