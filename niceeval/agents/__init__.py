"""Agents under test: the protocol and its adapters.

Adapters: functions, OpenAI and Anthropic tool loops, HTTP services, agent frameworks (the OpenAI Agents SDK,
pydantic-ai, LangGraph), the coding agents Claude Code and Codex (run as their command lines), and any other agent
through the OpenAI bridge.

The model, HTTP and framework adapters are imported on first use, so `import niceeval` does not pay for the SDKs,
and the frameworks are needed only by those who use them (each is an extra: `pip install 'niceeval[langgraph]'`).

Design: docs/design/agents.md
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
from niceeval._core.lazy import lazy_getattr
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

__getattr__ = lazy_getattr(
    __name__,
    {
        "anthropic_agent": "niceeval.agents._anthropic",
        "BridgeAgent": "niceeval.agents._bridge",
        "BridgeSession": "niceeval.agents._bridge",
        "bridge_agent": "niceeval.agents._bridge",
        "claude_code_agent": "niceeval.agents._claude_code",
        "codex_agent": "niceeval.agents._codex",
        "CodingAgentOptions": "niceeval.agents._coding",
        "CheckpointStore": "niceeval.agents._checkpoints",
        "MemoryCheckpoints": "niceeval.agents._checkpoints",
        "SQLiteCheckpoints": "niceeval.agents._checkpoints",
        "answer_followup": "niceeval.agents._followups",
        "AgentError": "niceeval.agents._http",
        "HTTPAgent": "niceeval.agents._http",
        "http_agent": "niceeval.agents._http",
        "langgraph_agent": "niceeval.agents._langgraph",
        "ModelAgent": "niceeval.agents._model",
        "ModelAgentOptions": "niceeval.agents._model",
        "openai_agent": "niceeval.agents._openai",
        "openai_agents_agent": "niceeval.agents._openai_agents",
        "pydantic_ai_agent": "niceeval.agents._pydantic_ai",
        "TracedAgent": "niceeval.agents._traced",
        "TracedSession": "niceeval.agents._traced",
        "traced_agent": "niceeval.agents._traced",
    },
    gone={
        "Reply": "niceeval.agents.Reply is now niceeval.agents.AgentReply (niceeval.testing.Reply is the scripted "
        "server's reply, a different class): write `from niceeval.agents import AgentReply`",
    },
)
