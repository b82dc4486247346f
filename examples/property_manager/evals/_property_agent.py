"""A property-management assistant in the spirit of seed 002: listings, bookings and revenue over SQLite.

`TOOLS` are plain Python functions with docstrings, so a model-backed agent can use them as they are
(`openai_agent(tools=TOOLS, ...)`). `offline_agent` is a rule-based stand-in for the model that calls the same
tools through the session, so the evals run with no API key and still produce a real event stream.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from typing import Any

from niceeval.agents import AgentReply, FunctionSession, function_agent

APPROVAL_LIMIT_USD = 1000
_LISTINGS = [
    (1, "Lisbon", "Alfama loft", 120),
    (2, "Lisbon", "Belém riverside flat", 95),
    (3, "Porto", "Ribeira studio", 80),
    (4, "Porto", "Foz villa", 450),
]
_PAST_BOOKINGS = [  # (listing_id, guest, nights, month)
    (1, "Ana", 3, "2026-10"),
    (3, "Bruno", 2, "2026-10"),
    (4, "Chen", 4, "2026-09"),
]

_lock = threading.Lock()
_db = sqlite3.connect(":memory:", check_same_thread=False)
_db.executescript(
    """
    CREATE TABLE listings (id INTEGER PRIMARY KEY, city TEXT, title TEXT, nightly_rate INTEGER);
    CREATE TABLE bookings (id INTEGER PRIMARY KEY AUTOINCREMENT, listing_id INTEGER, guest TEXT,
                           nights INTEGER, month TEXT, total INTEGER);
    """
)
_db.executemany("INSERT INTO listings VALUES (?, ?, ?, ?)", _LISTINGS)
_db.executemany(
    "INSERT INTO bookings (listing_id, guest, nights, month, total) "
    "SELECT ?, ?, ?, ?, nightly_rate * ? FROM listings WHERE id = ?",
    [(lid, guest, nights, month, nights, lid) for lid, guest, nights, month in _PAST_BOOKINGS],
)


def search_listings(city: str) -> list[dict[str, Any]]:
    """Find the listings in a city.

    Args:
        city: City name, e.g. "Lisbon".
    """
    with _lock:
        rows = _db.execute(
            "SELECT id, title, nightly_rate FROM listings WHERE lower(city) = lower(?) ORDER BY id", (city,)
        ).fetchall()
    return [{"id": i, "title": t, "nightly_rate": r} for i, t, r in rows]


def book_listing(listing_id: int, guest: str, nights: int) -> dict[str, Any]:
    """Book a listing for a guest.

    Args:
        listing_id: The listing's id from search_listings.
        guest: The guest's name.
        nights: Number of nights, at least 1.
    """
    if nights < 1:
        raise ValueError("nights must be at least 1")
    with _lock:
        row = _db.execute("SELECT nightly_rate FROM listings WHERE id = ?", (listing_id,)).fetchone()
        if row is None:
            raise LookupError(f"no listing with id {listing_id}")
        total = row[0] * nights
        cursor = _db.execute(
            "INSERT INTO bookings (listing_id, guest, nights, month, total) VALUES (?, ?, ?, '2026-11', ?)",
            (listing_id, guest, nights, total),
        )
    return {"booking_id": cursor.lastrowid, "listing_id": listing_id, "guest": guest, "total": total}


def monthly_revenue(month: str) -> int:
    """Total revenue of past bookings in a month.

    Args:
        month: "YYYY-MM".
    """
    with _lock:
        (total,) = _db.execute("SELECT coalesce(sum(total), 0) FROM bookings WHERE month = ?", (month,)).fetchone()
    return int(total)


TOOLS = [search_listings, book_listing, monthly_revenue]
SYSTEM = (
    "You are a property-management assistant. Use the tools to search listings, book them and report revenue. "
    f"Bookings over ${APPROVAL_LIMIT_USD} need the manager's approval before you book."
)


def _last_search(session: FunctionSession) -> list[dict[str, Any]]:
    for event in reversed(session.history):
        if event.role == "assistant" and isinstance(event.data, dict) and "listings" in event.data:
            return list(event.data["listings"])
    return []


def _book(session: FunctionSession, listing_id: int, guest: str, nights: int) -> str:
    booking = session.call_tool("book_listing", book_listing, listing_id=listing_id, guest=guest, nights=nights)
    if isinstance(booking, str):
        return f"I could not book that: {booking}"
    total, number = booking["total"], booking["booking_id"]
    return f"Booked listing {listing_id} for {guest}, {nights} nights: ${total} (booking #{number})."


def _offline(message: str, session: FunctionSession) -> str | AgentReply:
    text = message.lower()
    if city := re.search(r"listings in (\w+)", text):
        found = session.call_tool("search_listings", search_listings, city=city.group(1))
        listings = found if isinstance(found, list) else []
        names = ", ".join(f"{x['title']} (${x['nightly_rate']}/night)" for x in listings)
        return AgentReply(text=f"I found: {names or 'nothing'}.", data={"listings": listings})
    if month := re.search(r"revenue .*?(\d{4}-\d{2})", text):
        total = session.call_tool("monthly_revenue", monthly_revenue, month=month.group(1))
        return f"Revenue for {month.group(1)}: ${total}."
    if text.startswith("approve"):
        pending = re.search(r"listing (\d+) for (\w+), (\d+) nights", _last_request(session))
        if pending:
            return _book(session, int(pending.group(1)), pending.group(2).title(), int(pending.group(3)))
        return "There is nothing waiting for approval."
    if booking := re.search(r"book (?:the (first|second) one|listing (\d+)) for (\w+),? (\d+) nights", text):
        listings = _last_search(session)
        if booking.group(2):
            listing_id = int(booking.group(2))
        elif listings:
            listing_id = listings[0 if booking.group(1) == "first" else 1]["id"]
        else:
            return "Which listing do you mean? Search for listings first."
        guest, nights = booking.group(3).title(), int(booking.group(4))
        rate = next((x["nightly_rate"] for x in listings if x["id"] == listing_id), None) or _rate(listing_id)
        if rate * nights > APPROVAL_LIMIT_USD:
            what = f"listing {listing_id} for {guest}, {nights} nights"
            session.request_input(f"Approve booking {what} (${rate * nights})?")
            return f"Booking {what} costs ${rate * nights}; I need approval."
        return _book(session, listing_id, guest, nights)
    return "I can search listings, book them, and report revenue. What would you like?"


def _last_request(session: FunctionSession) -> str:
    for event in reversed(session.log.events):
        if event.type == "input.requested":
            return event.prompt.lower()
    return ""


def _rate(listing_id: int) -> int:
    with _lock:
        row = _db.execute("SELECT nightly_rate FROM listings WHERE id = ?", (listing_id,)).fetchone()
    return int(row[0]) if row else 0


offline_agent = function_agent(_offline)


def property_agent() -> object:
    """The agent the evals use: a real model when OPENAI_API_KEY is set, else the offline stand-in."""
    if os.environ.get("OPENAI_API_KEY"):
        from niceeval.agents import openai_agent

        return openai_agent(model="openai/gpt-5-mini", system=SYSTEM, tools=TOOLS)
    return offline_agent
