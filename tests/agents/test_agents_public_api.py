"""The agents package's public names, and that importing niceeval loads no provider SDK."""

from __future__ import annotations

import subprocess
import sys

import pytest

import niceeval.agents


def test_agents_exports() -> None:
    assert sorted(niceeval.agents.__all__) == sorted(
        [
            "ActionCalledEvent",
            "ErrorEvent",
            "Event",
            "EventLog",
            "InputRequestedEvent",
            "MessageEvent",
            "SubagentCalledEvent",
            "UsageEvent",
            "Agent",
            "AgentError",
            "Attachment",
            "AgentSession",
            "BridgeAgent",
            "BridgeSession",
            "CheckpointStore",
            "CodingAgentOptions",
            "FunctionAgent",
            "FunctionSession",
            "HTTPAgent",
            "MemoryCheckpoints",
            "ModelAgent",
            "ModelAgentOptions",
            "AgentReply",
            "SQLiteCheckpoints",
            "TracedAgent",
            "TracedSession",
            "TurnStatus",
            "answer_followup",
            "anthropic_agent",
            "bridge_agent",
            "claude_code_agent",
            "codex_agent",
            "current_workspace",
            "function_agent",
            "http_agent",
            "langgraph_agent",
            "openai_agent",
            "openai_agents_agent",
            "traced_agent",
            "pydantic_ai_agent",
            "per_variant",
        ]
    )


def test_the_old_reply_name_says_what_to_write() -> None:
    """`niceeval.agents.Reply` was renamed: it shared its name with `niceeval.testing.Reply`, another class."""
    with pytest.raises(ImportError, match=r"now niceeval\.agents\.AgentReply.*from niceeval\.agents import AgentReply"):
        from niceeval.agents import Reply  # noqa: F401


def test_the_two_reply_classes_have_distinct_names() -> None:
    import niceeval.testing

    assert niceeval.agents.AgentReply.__name__ == "AgentReply"
    assert niceeval.testing.Reply.__name__ == "Reply"
    assert "Reply" not in niceeval.agents.__all__


def test_importing_niceeval_and_building_agents_loads_no_sdk() -> None:
    code = (
        "import sys, niceeval\n"
        "from niceeval.agents import anthropic_agent, bridge_agent, http_agent, openai_agent\n"
        "openai_agent('openai/gpt-5-mini'); anthropic_agent('anthropic/claude-haiku-4-5'); http_agent('http://x')\n"
        "bridge_agent(lambda message, session: message)\n"
        "print(sorted(m for m in ('openai', 'anthropic', 'httpx', 'httpx2', 'uvicorn') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
