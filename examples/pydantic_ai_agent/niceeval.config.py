"""A pydantic-ai agent under test. Offline by default (see _offline.py); `niceeval run` here."""

import _shop
from _offline import offline_base_url
from pydantic_ai import Agent, ModelRetry

from niceeval import define_config
from niceeval.agents import pydantic_ai_agent


def cancel_order(order_id: str) -> str:
    """Cancel an order that has not shipped yet.

    Args:
        order_id: The order number, e.g. "5678".
    """
    try:
        return _shop.cancel_order(order_id)
    except ValueError as exc:  # pydantic-ai's way to tell the model a tool call did not work
        raise ModelRetry(str(exc)) from exc


support = Agent(
    "openai:gpt-5-mini",
    instructions="You answer questions about orders. Use the tools; never guess an order's status.",
    tools=[_shop.lookup_order, cancel_order],
    defer_model_check=True,  # the model is built per run by the adapter, so no key is needed at import
)

config = define_config(agent=pydantic_ai_agent(support, base_url=offline_base_url()), concurrency=4, timeout=60)
