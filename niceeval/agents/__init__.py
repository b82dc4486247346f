"""Agents under test: the protocol and its adapters.

Adapters: functions, OpenAI and Anthropic tool loops, HTTP services, agent frameworks (the OpenAI Agents SDK,
pydantic-ai, LangGraph), the coding agents Claude Code and Codex (run as their command lines), and any other agent
through the OpenAI bridge.

The model, HTTP and framework adapters are imported on first use, so `import niceeval` does not pay for the SDKs,
and the frameworks are needed only by those who use them (each is an extra: `pip install 'niceeval[langgraph]'`).

Design: docs/design/agents.md
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from niceeval._core.events import (
    ActionCalledEvent,
    ErrorEvent,
    Event,
    EventLog,
    InputRequestedEvent,
    MessageEvent,
    SubagentCalledEvent,
    UsageEvent,
)
from niceeval.agents._attachments import Attachment
from niceeval.agents._function import FunctionAgent, FunctionSession, function_agent
from niceeval.agents._protocol import Agent, AgentReply, AgentSession, TurnStatus, current_workspace
from niceeval.agents._variant import per_variant

if TYPE_CHECKING:
    from niceeval.agents._anthropic import anthropic_agent
    from niceeval.agents._bridge import BridgeAgent, BridgeSession, bridge_agent
    from niceeval.agents._checkpoints import CheckpointStore, MemoryCheckpoints, SQLiteCheckpoints
    from niceeval.agents._claude_code import claude_code_agent
    from niceeval.agents._codex import codex_agent
    from niceeval.agents._coding import CodingAgentOptions
    from niceeval.agents._followups import answer_followup
    from niceeval.agents._http import AgentError, HTTPAgent, http_agent
    from niceeval.agents._langgraph import langgraph_agent
    from niceeval.agents._model import ModelAgent, ModelAgentOptions
    from niceeval.agents._openai import openai_agent
    from niceeval.agents._openai_agents import openai_agents_agent
    from niceeval.agents._pydantic_ai import pydantic_ai_agent
    from niceeval.agents._traced import TracedAgent, TracedSession, traced_agent

_LAZY = {
    "anthropic_agent": "_anthropic",
    "BridgeAgent": "_bridge",
    "BridgeSession": "_bridge",
    "bridge_agent": "_bridge",
    "claude_code_agent": "_claude_code",
    "codex_agent": "_codex",
    "CodingAgentOptions": "_coding",
    "CheckpointStore": "_checkpoints",
    "MemoryCheckpoints": "_checkpoints",
    "SQLiteCheckpoints": "_checkpoints",
    "answer_followup": "_followups",
    "AgentError": "_http",
    "HTTPAgent": "_http",
    "http_agent": "_http",
    "langgraph_agent": "_langgraph",
    "ModelAgent": "_model",
    "ModelAgentOptions": "_model",
    "openai_agent": "_openai",
    "openai_agents_agent": "_openai_agents",
    "pydantic_ai_agent": "_pydantic_ai",
    "TracedAgent": "_traced",
    "TracedSession": "_traced",
    "traced_agent": "_traced",
}

__all__ = [
    # what an agent of your own records, without reaching into niceeval's internals
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
    "AgentReply",
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
    "SQLiteCheckpoints",
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
    "pydantic_ai_agent",
    "per_variant",
    "TracedAgent",
    "TracedSession",
    "traced_agent",
]


RENAMED = {"Reply": "AgentReply"}
"""Public names that changed, so an old import says what to write instead."""


def __getattr__(name: str) -> Any:
    if name in RENAMED:
        new = RENAMED[name]
        raise ImportError(
            f"niceeval.agents.{name} is now niceeval.agents.{new} (niceeval.testing.Reply is the scripted server's "
            f"reply, a different class): write `from niceeval.agents import {new}`",
            name=name,
        )
    if name in _LAZY:
        value = getattr(importlib.import_module(f"niceeval.agents.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'niceeval.agents' has no attribute {name!r}")
