"""Agents under test: the protocol and its adapters (functions, OpenAI and Anthropic tool loops, HTTP services)."""

from niceeval.agents._anthropic import anthropic_agent
from niceeval.agents._checkpoints import CheckpointStore, MemoryCheckpoints, SQLiteCheckpoints
from niceeval.agents._followups import answer_followup
from niceeval.agents._function import FunctionAgent, FunctionSession, function_agent
from niceeval.agents._http import AgentError, HTTPAgent, http_agent
from niceeval.agents._model import ModelAgent
from niceeval.agents._openai import openai_agent
from niceeval.agents._protocol import Agent, AgentSession, Reply, TurnStatus, current_workspace

__all__ = [
    "Agent",
    "AgentError",
    "AgentSession",
    "CheckpointStore",
    "FunctionAgent",
    "FunctionSession",
    "HTTPAgent",
    "MemoryCheckpoints",
    "ModelAgent",
    "Reply",
    "SQLiteCheckpoints",
    "TurnStatus",
    "answer_followup",
    "anthropic_agent",
    "current_workspace",
    "function_agent",
    "http_agent",
    "openai_agent",
]
