"""An eval that blocks the event loop cannot pass by overrunning its timeout, and is named while it stalls others."""

from __future__ import annotations

import pytest

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
