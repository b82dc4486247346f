"""Benchmark (run by hand): what loading genai-prices adds to a one-eval `niceeval run`.

A tiny project whose one eval makes one `openai_agent` call and one judge call to the local LLM server, run as a
user would (a new process each time), in pairs: with prices (genai-prices loads in a worker thread) and without
(`genai_prices` blocked, so niceeval falls back to its own table at once). Prints each side's median wall time.

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
import sys
if sys.argv[1] == "without":
    sys.modules["genai_prices"] = None
from niceeval.cli import main
sys.exit(main(["run", "--no-store", "--no-cache", "--json", "report.json"]))
"""


def _script(request: LLMRequest) -> Reply:
    usage = TokenUsage(input_tokens=1000, output_tokens=200)
    if request.output_schema is not None:
        return Reply(data={"reason": "It greets.", "pass": True, "score": 1.0}, usage=usage)
    return Reply(text="Hello there!", usage=usage)


def _timed(side: str, root: Path, env: dict[str, str]) -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", RUN, side], cwd=root, env=env, check=True, capture_output=True, timeout=120)
    return time.perf_counter() - began


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
        _timed("with", root, env)  # compiles what needs compiling; not counted
        times: dict[str, list[float]] = {"with": [], "without": []}
        for _ in range(args.pairs):
            for side in ("without", "with"):
                times[side].append(_timed(side, root, env))
    for side, values in times.items():
        print(f"{side} prices: median {statistics.median(values):.3f} s  ({', '.join(f'{v:.2f}' for v in values)})")
    added = statistics.median(times["with"]) - statistics.median(times["without"])
    paired = statistics.median(w - wo for w, wo in zip(times["with"], times["without"], strict=True))
    print(f"added by genai-prices: {added * 1000:+.0f} ms between medians, {paired * 1000:+.0f} ms median per pair")


if __name__ == "__main__":
    main()
