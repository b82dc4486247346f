"""docs/experiments.md is real: its `# file:` blocks make a project whose experiments run against the offline
server, and a second run with more attempts makes only the missing requests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from niceeval.testing import LLMRequest, LLMServer, Reply
from tests.test_docs import BLOCK, DOCS


def _reply(request: LLMRequest) -> Reply:
    asked = request.last_user_text
    if "France" in asked:
        return Reply(text="Paris.")
    if "Japan" in asked:
        return Reply(text="Tokyo.")
    if "terse" in request.system:
        return Reply(text="Hi.")
    return Reply(text="Hello there! It is lovely to hear from you; how can I help you today?")


def _exp(root: Path, server: LLMServer, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NICEEVAL", "OPENAI", "ANTHROPIC"))}
    env.update(OPENAI_API_KEY="test-key", OPENAI_BASE_URL=server.base_url, COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "niceeval.cli", "exp", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.slow
def test_the_experiments_page_runs_a_model_comparison_and_a_prompt_ab(tmp_path: Path) -> None:
    blocks = list(BLOCK.finditer((DOCS / "experiments.md").read_text()))
    assert len(blocks) == 7
    for block in blocks:
        target = tmp_path / block["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block["body"])
    with LLMServer(_reply) as server:
        done = _exp(tmp_path, server)
        assert done.returncode == 0, done.stdout + done.stderr
        assert Counter(r.model for r in server.requests) == {"gpt-5-mini": 6 + 2 + 2, "gpt-5": 6}
        assert done.stdout.count("0 failed") == 4, done.stdout
        first = len(server.requests)
        more = _exp(tmp_path, server, "experiments/mini.py", "--runs", "5")
        assert more.returncode == 0, more.stdout + more.stderr
        assert [r.model for r in server.requests[first:]] == ["gpt-5-mini"] * 4  # 2 more attempts of 2 evals
