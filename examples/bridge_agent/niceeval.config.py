"""Any agent through the OpenAI bridge: a plain OpenAI SDK loop, recorded with no adapter. Offline by default."""

from _offline import offline_base_url
from _support import answer
from openai import AsyncOpenAI

from niceeval import define_config
from niceeval.agents import BridgeSession, bridge_agent


async def support(message: str, session: BridgeSession) -> str:
    """Run the agent with its client pointed at this session's bridge URL; the conversation so far as input."""
    async with AsyncOpenAI(base_url=session.base_url, api_key=session.api_key) as client:
        return await answer(client, [{"role": m.role, "content": m.text} for m in session.history])


config = define_config(agent=bridge_agent(support, upstream=offline_base_url()), concurrency=4, timeout=60)
