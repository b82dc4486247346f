"""docs/simulation.md's examples run as written, with the offline server as the user model."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from niceeval.cli import main
from niceeval.testing import LLMRequest, LLMServer

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"```python\n# file: (?P<path>\S+)\n(?P<body>.*?)```", re.S)


def user_model(request: LLMRequest) -> dict[str, object]:
    said = request.messages[-1].content
    if "agent: Done: order 1042 is refunded" in said:
        return {"goal_met": True, "agent_ended": False, "message": ""}
    if "agent: I can help with refunds" in said:
        return {"goal_met": False, "agent_ended": False, "message": "Order 1042."}
    return {"goal_met": False, "agent_ended": False, "message": "I want my money back."}


def test_the_simulation_page_examples_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = list(BLOCK.finditer((DOCS / "simulation.md").read_text(encoding="utf-8")))
    assert [b["path"] for b in blocks] == ["niceeval.config.py", "evals/refunds.py"]
    for block in blocks:
        (tmp_path / block["path"]).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / block["path"]).write_text(block["body"], encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with LLMServer(user_model) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        assert main(["run"]) == 0, capsys.readouterr().out
        asked = len(server.requests)
        assert main(["run"]) == 0
        assert (asked, len(server.requests)) == (6, 6)  # the rerun replayed every user turn
    assert "2 passed" in capsys.readouterr().out
