"""A tiny offline support agent: deterministic rules standing in for a model, so the suite needs no API key."""

from __future__ import annotations

import re

from pydantic import BaseModel


class Intent(BaseModel):
    intent: str
    order_id: str | None = None


def support_agent(message: str) -> str | Intent:
    """Answer a customer message; asked for JSON, return the classified intent instead."""
    order = re.search(r"\d{3,}", message)
    if "as json" in message.lower():
        intent = "refund" if "refund" in message.lower() else "other"
        return Intent(intent=intent, order_id=order.group() if order else None)
    if "refund" in message.lower() and order:
        return (
            f"I'm sorry about order #{order.group()}. Your refund is on its way and should arrive "
            "within 5 business days. Kind regards, the support team"
        )
    if "hours" in message.lower():
        return "We are open Monday to Friday, 9:00 to 17:00. Kind regards, the support team"
    return "Could you tell me your order number? Kind regards, the support team"
