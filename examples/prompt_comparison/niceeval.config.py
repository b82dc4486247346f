"""Two prompts compared over 20 cases, with max-score and a calibrated judge. Offline by default (_offline.py)."""

from _offline import start_offline

from niceeval import define_config
from niceeval.agents import MemoryCheckpoints, ModelAgentOptions, openai_agent, per_variant

start_offline()


def agent_for(variant):
    """One agent per prompt variant: same model, the variant's system prompt."""
    options = ModelAgentOptions(checkpoints=MemoryCheckpoints())
    return openai_agent("openai/gpt-5-mini", system=variant["prompt"], options=options)


config = define_config(
    agent=per_variant(agent_for),
    judge={"model": "openai/gpt-5-mini"},
    pricing={"openai/gpt-5-mini": {"input_per_mtok": 0.25, "output_per_mtok": 2.0}},
    concurrency=8,
)
