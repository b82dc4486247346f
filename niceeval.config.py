"""niceeval's own example suite: runs offline, with no server and no API key."""

from evals._support_agent import support_agent
from niceeval import define_config

config = define_config(
    agent=support_agent,
    evals=["evals", "examples/property_manager/evals", "examples/coding_agent/evals"],
    concurrency=8,
    timeout=60,
)
