"""`niceeval.simulate(...)` through the pytest fixture: the same user model and cache as `niceeval run`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from niceeval.testing import LLMRequest, LLMServer

CONFIG = """\
from niceeval import define_config


def desk(message: str) -> str:
    return "Refunded." if "1042" in message else "Which order?"


config = define_config(agent=desk, judge={"model": "openai/user"})
"""

TESTS = """\
def test_the_user_reaches_the_goal(niceeval):
    sim = niceeval.simulate(user="impatient", goal="a refund for order 1042", max_turns=3)
    assert sim.goal_met and len(sim.turns) == 2
"""


def user(request: LLMRequest) -> dict[str, object]:
    said = request.messages[-1].content
    if "agent: Refunded." in said:
        return {"goal_met": True, "agent_ended": False, "message": ""}
    return {"goal_met": False, "agent_ended": False, "message": "1042." if "Which order?" in said else "Refund."}


def test_the_fixture_simulates(tmp_path: Path) -> None:
    (tmp_path / "niceeval.config.py").write_text(CONFIG, encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_refund.py").write_text(TESTS, encoding="utf-8")
    with LLMServer(user) as server:
        env = {**os.environ, "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": server.base_url}
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "tests/"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert len(server.requests) == 3
