"""The agent protocol: open a session, send messages, get replies (and events), close."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from niceeval._core.events import EventLog

TurnStatus = Literal["completed", "failed", "waiting"]


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentReply:
    """What an agent session answers to one message."""

    text: str
    data: Any = None
    """Structured payload, when the agent returned a dict or a pydantic model."""
    status: TurnStatus = "completed"


@runtime_checkable
class AgentSession(Protocol):
    """One conversation with the agent under test."""

    id: str

    async def send(self, message: str, *, output: type[Any] | None = None) -> AgentReply:
        """Send a user message; return the agent's reply. Events go to the log given at `open`."""
        ...

    async def close(self) -> None:
        """End the conversation and free its resources."""
        ...


@runtime_checkable
class Agent(Protocol):
    """Anything that can open sessions: the extension point for adapters."""

    async def open(self, session_id: str, log: EventLog) -> AgentSession:
        """Start (or resume) the conversation `session_id`, reporting what happens to `log`."""
        ...


EXPERIMENT_MODEL: ContextVar[str | None] = ContextVar("niceeval_experiment_model", default=None)
"""The running experiment's `model=` (set by the runner around each run of `niceeval exp`): a model agent opened
in it calls that model instead of its own."""

WORKSPACE: ContextVar[Path | None] = ContextVar("niceeval_workspace", default=None)


def current_workspace() -> Path | None:
    """The sandbox workspace of the eval being run (`@define_eval(fixture=...)`), for agents that edit files."""
    return WORKSPACE.get()
