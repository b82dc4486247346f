"""`per_variant`: the agent under test built from each variant combination (`t.variant`)."""

from __future__ import annotations

from typing import Any

from niceeval._core.errors import UsageError
from niceeval._core.events import EventLog
from niceeval.agents._function import FunctionAgent
from niceeval.agents._protocol import Agent, AgentSession


class PerVariant:
    """An agent built per variant: `agent=per_variant(lambda v: openai_agent(model=v["model"]))`.

    The factory is called once per combination (on first use) and the agent is reused by every run of it.
    """

    def __init__(self, factory: Any) -> None:
        if not callable(factory):
            raise UsageError(f"per_variant() takes a function of the variant, got {factory!r:.60}.")
        self.factory = factory
        self._built: dict[str, Any] = {}

    def bind(self, variant: Any) -> VariantAgent:
        """The agent for `variant`, built when a session is first opened (evals that never send build nothing)."""
        return VariantAgent(self, variant)

    def build(self, variant: Any) -> Any:
        """The agent for `variant` (a `t.variant`; `None` when the eval has no variants)."""
        name = "" if variant is None else str(variant.name)
        if name not in self._built:
            self._built[name] = self.factory(variant)
        return self._built[name]


def per_variant(factory: Any) -> PerVariant:
    """Build the agent under test from each variant: the factory takes `t.variant` and returns an agent.

    Args:
        factory: A function `variant -> agent` (any agent `define_eval(agent=...)` accepts).
    """
    return PerVariant(factory)


class VariantAgent:
    """An agent adapter that builds the variant's agent on first use and delegates to it."""

    def __init__(self, source: PerVariant, variant: Any) -> None:
        self._source = source
        self._variant = variant

    async def open(self, session_id: str, log: EventLog) -> AgentSession:
        built = self._source.build(self._variant)
        if isinstance(built, Agent):
            return await built.open(session_id, log)
        if not callable(built):
            raise UsageError(f"per_variant's factory must return an agent or a function, got {built!r:.60}.")
        return await FunctionAgent(built).open(session_id, log)
