"""A real `niceeval run` prices its calls: genai-prices for a current model, the config's override on top."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from niceeval.providers._pricing import BUILTIN_PRICES, cost_of, find_price
from niceeval.testing import LLMRequest, LLMServer, Reply, TokenUsage

from ._project import make_project

CONFIG = """\
from niceeval import Price, define_config
from niceeval.agents import openai_agent

config = define_config(
    agent=openai_agent("openai/gpt-5.1"),
    judge={"model": "openai/gpt-3.5-turbo"},
    pricing={"openai/gpt-3.5-turbo": Price(input_per_mtok=1.0, output_per_mtok=2.0)},
)
"""

EVAL = """\
from niceeval import define_eval


@define_eval
async def greets(t):
    await t.send("hello")
    t.judge.rubric("Is the reply a greeting?")
"""

# `niceeval run`, noting which thread imports each genai-prices module: the event loop runs in the main thread.
SPIED_RUN = """\
import sys, threading

imports = []


class Spy:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "genai_prices":
            imports.append((name, threading.current_thread() is threading.main_thread()))
        return None


sys.meta_path.insert(0, Spy())
assert "genai_prices" not in sys.modules
from niceeval.cli import main

code = main(["run", "--no-store", "--no-cache", "--json", sys.argv[1]])
print("genai-prices modules imported:", len(imports))
print("imported on the loop's thread:", sorted(name for name, on_loop in imports if on_loop))
sys.exit(code)
"""

USAGE = TokenUsage(input_tokens=1000, output_tokens=200)


def _script(request: LLMRequest) -> Reply:
    if request.output_schema is not None:  # the judge
        return Reply(data={"reason": "It greets.", "pass": True, "score": 1.0}, usage=USAGE)
    return Reply(text="Hello there!", usage=USAGE)


@pytest.mark.slow
def test_a_run_prices_the_agent_by_genai_prices_and_the_judge_by_the_override(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.write("niceeval.config.py", CONFIG)
    project.write("evals/greet.py", EVAL)
    with LLMServer(_script) as server:
        run, stdout = _run(project.root, server, SPIED_RUN)
    assert "imported on the loop's thread: []" in stdout, stdout
    assert "genai-prices modules imported: 0" not in stdout
    assert run["warnings"] == []
    genai = find_price("openai/gpt-5.1")
    assert genai is not None and "openai/gpt-5.1" not in BUILTIN_PRICES
    assert run["agent_spend"]["cost"] == pytest.approx(cost_of(genai, input_tokens=1000, output_tokens=200))
    assert run["agent_spend"]["cost"] > 0 and run["agent_spend"]["unpriced"] == []
    (call,) = run["assertions"][0]["judge_calls"]
    assert call["model"] == "openai/gpt-3.5-turbo"
    assert call["cost"] == pytest.approx((1000 * 1.0 + 200 * 2.0) / 1e6)  # the override, not genai-prices' price


ECHO_EVAL = """\
from niceeval import define_eval


@define_eval
async def echoes(t):
    await t.send("hi")
"""


def test_a_run_that_prices_nothing_never_loads_the_price_data(tmp_path: Path) -> None:
    project = make_project(tmp_path)  # the echo agent: no model call, no usage to price
    project.write("evals/echo.py", ECHO_EVAL)
    _, stdout = _run(project.root, None, SPIED_RUN)
    assert "genai-prices modules imported: 0" in stdout


MEMO_CONFIG = """\
from niceeval import define_config
from niceeval.agents import openai_agent

config = define_config(agent=openai_agent("openai/gpt-5.1"), judge={"model": "openai/house-judge"})
"""

# `niceeval run`, then the genai-prices modules the process imported (none: every price came from the memo).
LISTED_RUN = """\
import sys
from niceeval.cli import main

code = main(["run", "--no-store", "--no-cache", "--json", sys.argv[1]])
print("genai-prices modules:", sorted(name for name in sys.modules if name.split(".")[0] == "genai_prices"))
sys.exit(code)
"""


def _run(root: Path, server: LLMServer | None, script: str) -> tuple[dict[str, Any], str]:
    """`script` (a `niceeval run` writing the JSON report named by its argument) in a new process, with `server`'s
    URL and a key when given: its eval's run from the report, and what it printed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NICEEVAL", "OPENAI", "ANTHROPIC"))}
    env["COLUMNS"] = "200"
    if server is not None:
        env.update(OPENAI_API_KEY="test-key", OPENAI_BASE_URL=server.base_url)
    report = root / "report.json"
    proc = subprocess.run(
        [sys.executable, "-c", script, str(report)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run: dict[str, Any] = json.loads(report.read_text())["evals"][0]["runs"][0]
    return run, proc.stdout


def _run_listing_imports(root: Path, server: LLMServer) -> tuple[dict[str, Any], str]:
    """One `niceeval run` in a new process: its eval's run from the JSON report, and the genai-prices line."""
    run, stdout = _run(root, server, LISTED_RUN)
    return run, next(line for line in stdout.splitlines() if line.startswith("genai-prices modules:"))


@pytest.mark.slow
def test_the_next_run_prices_from_the_projects_memo_without_loading_genai_prices(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.write("niceeval.config.py", MEMO_CONFIG)
    project.write("evals/greet.py", EVAL)
    memo = project.root / ".niceeval" / "prices.json"
    genai = find_price("openai/gpt-5.1")
    assert genai is not None and "openai/gpt-5.1" not in BUILTIN_PRICES
    agent_cost = cost_of(genai, input_tokens=1000, output_tokens=200)
    with LLMServer(_script) as server:
        first, first_imports = _run_listing_imports(project.root, server)
        assert "'genai_prices.data'" in first_imports  # the first run loads the data and memoizes what it gave
        written, file = json.loads(memo.read_text()), memo.stat()
        assert written["prices"] == {"openai/gpt-5.1": genai.model_dump(), "openai/house-judge": None}

        second, second_imports = _run_listing_imports(project.root, server)
        assert second_imports == "genai-prices modules: []"
        assert second["agent_spend"] == first["agent_spend"]
        assert second["agent_spend"]["cost"] == pytest.approx(agent_cost)
        assert second["judge_spend"]["cost"] is None
        assert second["judge_spend"]["unpriced"] == ["openai/house-judge"]
        assert (memo.stat().st_ino, memo.stat().st_mtime_ns) == (file.st_ino, file.st_mtime_ns)  # nothing new

        stale = {
            "key": {**written["key"], "day": "2000-01-01"},
            "prices": {"openai/gpt-5.1": {"input_per_mtok": 99.0, "output_per_mtok": 99.0}},
        }
        memo.write_text(json.dumps(stale))
        third, third_imports = _run_listing_imports(project.root, server)
    assert "'genai_prices.data'" in third_imports
    assert third["agent_spend"]["cost"] == pytest.approx(agent_cost)
    assert json.loads(memo.read_text()) == written  # today's key and prices again
