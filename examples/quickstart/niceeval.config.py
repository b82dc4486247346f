"""A complete, copyable niceeval project: an offline agent and evals for it. Run `niceeval run` here."""

from niceeval import define_config


def faq_agent(message: str) -> dict[str, str] | str:
    """Stand-in for your app: swap in a call to your real agent."""
    text = message.lower()
    if "json" in text:
        return {"topic": "shipping", "answer": "Orders ship within 2 days."}
    if "ship" in text:
        return "Orders ship within 2 days. Express shipping is available at checkout."
    return "I can help with shipping and returns."


config = define_config(agent=faq_agent, concurrency=4, timeout=30)
