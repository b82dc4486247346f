"""An OpenAI Agents SDK agent under test. Offline by default (see _offline.py); `niceeval run` here."""

from _offline import offline_base_url
from _shop import cancel_order, lookup_order
from agents import Agent, function_tool

from niceeval import define_config
from niceeval.agents import openai_agents_agent

support = Agent(
    name="support",
    instructions="You answer questions about orders. Use the tools; never guess an order's status.",
    model="gpt-5-mini",
    tools=[function_tool(lookup_order), function_tool(cancel_order)],
)

config = define_config(agent=openai_agents_agent(support, base_url=offline_base_url()), concurrency=4, timeout=60)
