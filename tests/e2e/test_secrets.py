"""API keys never appear in a file a run writes, nor in its output, wherever they turn up."""

from __future__ import annotations

from pathlib import Path

import pytest

from niceeval.testing import Fault, LLMServer

from ._project import Project

KEY = "sk-test-0123456789abcdefSECRET"

CONFIG = """\
from niceeval import define_config
from niceeval.agents import openai_agent

config = define_config(agent=openai_agent("openai/gpt-test"))
"""

EVALS = """\
import os

from niceeval import define_eval
from niceeval.expect import includes


def leaky(message):
    return "my key is " + os.environ["OPENAI_API_KEY"]


@define_eval
async def provider_quotes_the_key(t):
    await t.send("hi")


@define_eval(agent=leaky)
async def agent_echoes_the_key(t):
    await t.send("hi")
    t.check(t.reply, includes("nothing like this"))


@define_eval(agent=leaky)
async def eval_raises_with_the_key(t):
    raise RuntimeError("failed with " + os.environ["OPENAI_API_KEY"])
"""


def _written_files(*folders: Path) -> list[Path]:
    return [p for folder in folders for p in folder.rglob("*") if p.is_file()]


@pytest.mark.slow
def test_no_file_a_run_writes_holds_an_api_key(
    project: Project, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    llm_server.set_script([Fault.unauthorized(f"Incorrect API key provided: {KEY}.")])
    project.write("niceeval.config.py", CONFIG)
    project.write("evals/leaks.py", EVALS)
    result = project.run()
    assert result.code == 1, result.output
    assert "[redacted:OPENAI_API_KEY]" in result.eval("provider_quotes_the_key")["runs"][0]["error"]["message"]
    assert result.eval("agent_echoes_the_key")["runs"][0]["events"][1]["text"] == "my key is [redacted:OPENAI_API_KEY]"
    files = _written_files(project.root, project.out)
    assert any(p.suffix == ".json" for p in files) and any(p.suffix == ".xml" for p in files)
    leaking = [p for p in files if KEY.encode() in p.read_bytes()]
    assert leaking == []
    assert KEY not in result.output
