"""Helpers for the agent adapter tests: open a session with a fresh event log, pick events, fast retries."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from niceeval._core.events import Event, EventLog
from niceeval.agents import Agent, AgentSession, ModelAgent, ModelAgentOptions
from niceeval.providers import RetryPolicy

FAST_RETRY = RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.05)
"""Retries that keep fault tests fast."""


def model_agent(factory: Callable[..., ModelAgent], model: str, url: str, **settings: Any) -> ModelAgent:
    """`factory(model, ...)` against the local server: `system`/`tools`/`output` as arguments, the rest as options."""
    direct = {key: settings.pop(key) for key in ("system", "tools", "output") if key in settings}
    return factory(model, base_url=url, api_key="test", options=ModelAgentOptions(**settings), **direct)


@asynccontextmanager
async def opened(agent: Agent, session_id: str = "eval#1") -> AsyncIterator[tuple[AgentSession, EventLog]]:
    """A session of `agent` with a fresh event log, closed afterwards (so no client is left open)."""
    log = EventLog()
    session = await agent.open(session_id, log)
    try:
        yield session, log
    finally:
        await session.close()


def of_type(log: EventLog, kind: str) -> list[Event]:
    """The events of one type, in order."""
    return [e for e in log.events if e.type == kind]
