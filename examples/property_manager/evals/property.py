"""Evals for the property-management assistant: tools, multi-round, revival, human-in-the-loop."""

import re

from _property_agent import property_agent

from niceeval import EvalContext, define_eval
from niceeval.expect import includes, satisfies

AGENT = property_agent()


@define_eval(tags=["property", "tools"], agent=AGENT)
async def searches_listings_by_city(t: EvalContext) -> None:
    await t.send("Show me listings in Lisbon")
    t.check(t.reply, includes("Alfama loft"))
    t.called_tool("search_listings", input={"city": re.compile("(?i)lisbon")}, count=1)
    t.not_called_tool("book_listing")
    t.no_failed_actions()


@define_eval(tags=["property", "tools"], agent=AGENT)
async def reports_monthly_revenue(t: EvalContext) -> None:
    await t.send("What was the revenue for 2026-10?")
    t.check(t.reply, includes("520"))
    t.called_tool("monthly_revenue", input={"month": "2026-10"})
    t.max_tool_calls(2)


@define_eval(tags=["property", "multi-round"], agent=AGENT)
async def books_what_it_just_found(t: EvalContext) -> None:
    """The second message refers to the first one's results: the session keeps context."""
    await t.send("Show me listings in Porto")
    turn = await t.send("Book the first one for Dana, 2 nights")
    t.check(turn.message, includes(re.compile(r"Booked listing 3 .*\$160")))
    t.tool_order(["search_listings", "book_listing"])
    t.called_tool("book_listing", input={"listing_id": 3, "nights": 2}, count=1)


@define_eval(tags=["property", "revival"], agent=AGENT)
async def continues_after_revival(t: EvalContext) -> None:
    """Close the session and reopen it by id: the booking still knows what was searched before."""
    await t.send("Show me listings in Lisbon")
    await t.revive()
    await t.send("Book the second one for Eli, 1 nights")
    t.check(t.reply, includes("Booked listing 2"))
    t.succeeded()


@define_eval(tags=["property", "hitl"], agent=AGENT)
async def expensive_booking_waits_for_approval(t: EvalContext) -> None:
    """Over the approval limit the agent parks; the manager's answer lets it book."""
    await t.send("Show me listings in Porto")
    turn = await t.send("Book listing 4 for Faye, 3 nights")
    t.check(turn.status, satisfies(lambda s: s == "waiting", "parked for approval"))
    t.event("input.requested", count=1)
    await t.respond("approve")
    t.check(t.reply, includes("Booked listing 4"))
    t.called_tool("book_listing", input={"listing_id": 4}, count=1)
    t.succeeded()


@define_eval(tags=["property", "hitl"], agent=AGENT)
async def parks_without_approval(t: EvalContext) -> None:
    await t.send("Book listing 4 for Gus, 5 nights")
    t.parked()
    t.not_called_tool("book_listing")
