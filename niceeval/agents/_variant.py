"""`per_variant`: the agent under test built from each variant combination (`t.variant`)."""

from __future__ import annotations

from typing import Any

from niceeval._core.errors import UsageError


class PerVariant:
    """An agent built per variant: `agent=per_variant(lambda v: openai_agent(model=v["model"]))`.

    The factory is called once per combination (on first use) and the agent is reused by every run of it.
    """

    def __init__(self, factory: Any) -> None:
        if not callable(factory):
            raise UsageError(f"per_variant() takes a function of the variant, got {factory!r:.60}.")
        self.factory = factory
        self._built: dict[str, Any] = {}

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
