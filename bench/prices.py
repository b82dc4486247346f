"""Benchmark (run by hand): what pricing adds to a one-eval `niceeval run`, and what `.niceeval/prices.json` saves.

A tiny project whose one eval makes one `openai_agent` call and one judge call to the local LLM server, run as a
user would (a new process each time), in rounds of three sides: `cold memo` (the memo deleted first: genai-prices
loads in a worker thread and the memo is written), `warm memo` (the memo the previous run wrote: genai-prices is
never imported) and `no genai-prices` (`genai_prices` blocked, so niceeval falls back to its own table at once).
Prints each side's median wall time, CPU time (the process's own, start-up included) and peak RSS (`VmHWM`).

    python bench/prices.py [--pairs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from niceeval.testing import LLMRequest, LLMServer, Reply, TokenUsage  # noqa: E402

CONFIG = """\
from niceeval import define_config
from niceeval.agents import openai_agent

config = define_config(agent=openai_agent("openai/gpt-5.1"), judge={"model": "openai/gpt-5.2"})
"""
EVAL = """\
from niceeval import define_eval


@define_eval
async def greets(t):
    await t.send("hello")
    t.judge.rubric("Is the reply a greeting?")
"""
RUN = """\
import sys, time
if sys.argv[1] == "no genai-prices":
    sys.modules["genai_prices"] = None
from niceeval.cli import main
code = main(["run", "--no-store", "--no-cache", "--json", "report.json"])
peak = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(f"measured {time.process_time()} {peak}")
sys.exit(code)
"""
SIDES = ("cold memo", "warm memo", "no genai-prices")


def _script(request: LLMRequest) -> Reply:
    usage = TokenUsage(input_tokens=1000, output_tokens=200)
    if request.output_schema is not None:
        return Reply(data={"reason": "It greets.", "pass": True, "score": 1.0}, usage=usage)
    return Reply(text="Hello there!", usage=usage)


def _measured(side: str, root: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """Wall s, CPU s and peak RSS (MB) of one `niceeval run`."""
    if side == "cold memo":
        (root / ".niceeval" / "prices.json").unlink(missing_ok=True)
    began = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", RUN, side], cwd=root, env=env, check=True, capture_output=True, text=True, timeout=120
    )
    wall = time.perf_counter() - began
    cpu, peak_kb = next(line for line in proc.stdout.splitlines() if line.startswith("measured ")).split()[1:]
    return wall, float(cpu), int(peak_kb) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, LLMServer(_script) as server:
        root = Path(folder)
        (root / "evals").mkdir()
        (root / "niceeval.config.py").write_text(CONFIG)
        (root / "evals" / "greet.py").write_text(EVAL)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NICEEVAL", "OPENAI", "ANTHROPIC"))}
        env.update(OPENAI_API_KEY="bench", OPENAI_BASE_URL=server.base_url)
        _measured("cold memo", root, env)  # compiles what needs compiling; not counted
        figures: dict[str, list[tuple[float, float, float]]] = {side: [] for side in SIDES}
        for _ in range(args.pairs):
            for side in SIDES:
                figures[side].append(_measured(side, root, env))
    for side, rows in figures.items():
        wall, cpu, rss = (statistics.median(column) for column in zip(*rows, strict=True))
        print(f"{side:>16}: median wall {wall:.3f} s, CPU {cpu:.3f} s, peak RSS {rss:.1f} MB")
    for name, index in (("CPU", 1), ("peak RSS", 2)):
        saved = statistics.median(
            c[index] - w[index] for c, w in zip(figures["cold memo"], figures["warm memo"], strict=True)
        )
        print(f"warm memo saves {saved:.3f} {'s' if index == 1 else 'MB'} of {name} (median per round)")


if __name__ == "__main__":
    main()
