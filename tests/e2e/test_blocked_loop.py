"""An eval that blocks the event loop cannot pass by overrunning its timeout, and is named while it stalls others."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from niceeval._run.watchdog import StallSite, stall_site
from niceeval.testing import LLMServer, Reply

from ._project import Project, Result, make_project

BLOCKING = """\
import time

from niceeval import define_eval
from niceeval.expect import includes


@define_eval(timeout=1)
async def blocks_the_loop(t):
    await t.send("hi")
    time.sleep(3)  # a sync call inside async def: the loop cannot interrupt it
    t.check(t.reply, includes("hi"))


@define_eval
async def waits_behind_it(t):
    await t.send("hi")
    t.check(t.reply, includes("hi"))
"""


@pytest.fixture(scope="module")
def blocked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Project, Result]:
    project = make_project(tmp_path_factory.mktemp("blocked"))
    project.write("evals/blocking.py", BLOCKING)
    return project, project.run()


@pytest.mark.slow
def test_an_eval_that_blocks_past_its_timeout_fails_as_a_timeout(blocked: tuple[Project, Result]) -> None:
    project, result = blocked
    assert result.code == 1, result.output
    run = result.eval("blocks_the_loop")["runs"][0]
    assert run["outcome"] == "failed"
    assert (run["error"]["type"], run["error"]["kind"]) == ("TimeoutError", "timeout")
    assert "within its 1 s timeout: it ran 3." in run["error"]["message"]
    assert "blocked the event loop" in run["error"]["message"]
    assert run["error"]["location"] == f"evals/blocking.py:{project.line_of('evals/blocking.py', 'timeout=1')}"
    assert result.eval("waits_behind_it")["status"] == "passed"


@pytest.mark.slow
def test_a_run_blocking_the_loop_is_named_with_the_blocking_line(blocked: tuple[Project, Result]) -> None:
    project, result = blocked
    line = project.line_of("evals/blocking.py", "time.sleep(3)")
    who = "eval evals/blocking.py::blocks_the_loop"
    expected = f"{who} blocked the event loop for over 1 s at evals/blocking.py:{line}"
    assert f"niceeval: warning: {expected}" in result.stderr
    assert result.eval("blocks_the_loop")["runs"][0]["warnings"][0].startswith(expected)
    assert f"warning: {expected}" in result.stdout
    assert result.eval("waits_behind_it")["runs"][0]["warnings"] == []
    system_err = result.testcase("blocks_the_loop").find("system-err")
    assert system_err is not None and expected in (system_err.text or "")


SDK_AGENT_CONFIG = """\
from niceeval import define_config
from niceeval.agents import openai_agent

config = define_config(agent=openai_agent("openai/agent-model"))
"""

SDK_EVALS = """\
import time

from niceeval import define_eval


@define_eval
async def asks_the_model(t):
    await t.send("hello")


@define_eval
async def sleeps_on_the_loop(t):
    time.sleep(0.6)
"""

# The suite as `niceeval run` runs it, with a watchdog 4x as sensitive (0.25 s): importing the OpenAI SDK alone
# takes longer than that, so an import on the loop would be caught.
SENSITIVE_RUN = """\
import functools, sys
import niceeval._run.suite as suite
from niceeval._run.watchdog import LoopWatchdog
suite.LoopWatchdog = functools.partial(LoopWatchdog, threshold=0.25, tick=0.02)
assert "openai" not in sys.modules
from niceeval.cli import main
sys.exit(main(["run", "--no-store", "--json", sys.argv[1]]))
"""


@pytest.mark.slow
def test_an_agent_needing_an_sdk_stalls_nothing_and_the_users_blocking_line_is_named(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    project = make_project(tmp_path)
    project.write("niceeval.config.py", SDK_AGENT_CONFIG)
    project.write("evals/mixed.py", SDK_EVALS)
    llm_server.set_script(lambda request: Reply(text="Hello!"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NICEEVAL", "OPENAI"))}
    env.update(OPENAI_API_KEY="test-key", OPENAI_BASE_URL=llm_server.base_url, COLUMNS="200")
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-c", SENSITIVE_RUN, str(report)],
        cwd=project.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = project.line_of("evals/mixed.py", "time.sleep(0.6)")
    stalls = [text for text in proc.stderr.splitlines() if "blocked the event loop" in text]
    assert len(stalls) == 1, proc.stderr
    assert stalls[0].startswith(
        f"niceeval: warning: eval evals/mixed.py::sleeps_on_the_loop blocked the event loop for over 0.25 s "
        f"at evals/mixed.py:{line}"
    )
    evals = {e["id"].split("::")[-1]: e for e in json.loads(report.read_text())["evals"]}
    assert evals["asks_the_model"]["runs"][0]["warnings"] == []
    assert evals["asks_the_model"]["status"] == "passed"


def test_a_stall_in_niceevals_own_code_is_told_apart_from_the_users() -> None:
    import niceeval

    package = Path(niceeval.__file__).parent
    library = str(Path(sys.base_prefix) / "lib" / "python3" / "importlib" / "__init__.py")
    user = str(Path.cwd() / "evals" / "support.py")
    ours = stall_site(
        [
            ("<frozen importlib._bootstrap>", 1),
            (library, 2),
            (str(package / "agents" / "_model.py"), 9),
            (str(package / "_eval" / "context.py"), 5),
            (user, 12),
        ]
    )
    assert (ours.ours, ours.where, ours.called_from) == (True, "niceeval/agents/_model.py:9", "evals/support.py:12")
    theirs = stall_site([(library, 2), (user, 14), (str(package / "_run" / "execute.py"), 70)])
    assert (theirs.ours, theirs.where, theirs.called_from) == (False, "evals/support.py:14", None)
    assert stall_site([(library, 2)]) == StallSite(where=None)
