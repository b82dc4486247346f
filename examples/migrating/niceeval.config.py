"""The same three suites run from the peers' own files and from hand-written eval modules. Offline by default."""

from _offline import start_offline

from niceeval import define_config
from niceeval.agents import openai_agent

start_offline()

config = define_config(
    agent=openai_agent("openai/gpt-4o-mini"),  # the pydantic-evals and Inspect suites' task; promptfoo names its own
    judge={"model": "openai/gpt-4o-mini"},
    pricing={"openai/gpt-4o-mini": {"input_per_mtok": 0.15, "output_per_mtok": 0.6}},
)
