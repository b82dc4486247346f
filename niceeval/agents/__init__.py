"""Agents under test: the protocol and its adapters."""

from niceeval.agents._function import FunctionAgent, FunctionSession, function_agent
from niceeval.agents._protocol import Agent, AgentSession, Reply, TurnStatus, current_workspace

__all__ = [
    "Agent",
    "AgentSession",
    "FunctionAgent",
    "FunctionSession",
    "Reply",
    "TurnStatus",
    "current_workspace",
    "function_agent",
]
