"""The app under test: a tiny order desk. Plain functions, so any framework can use them as tools."""

from __future__ import annotations

from pydantic import BaseModel

ORDERS = {"1234": "shipped", "5678": "processing"}


class OrderStatus(BaseModel):
    order_id: str
    status: str


def lookup_order(order_id: str) -> str:
    """Look up where an order is.

    Args:
        order_id: The order number, e.g. "1234".
    """
    return f"order {order_id} is {ORDERS.get(order_id, 'unknown')}"


def cancel_order(order_id: str) -> str:
    """Cancel an order that has not shipped yet.

    Args:
        order_id: The order number, e.g. "5678".
    """
    if ORDERS.get(order_id) == "shipped":
        raise ValueError(f"order {order_id} has shipped and cannot be cancelled")
    return f"order {order_id} is cancelled"
