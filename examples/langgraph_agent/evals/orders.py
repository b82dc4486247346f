"""Evals for the order desk agent: tool calls, a failing tool, structured output, a follow-up turn."""

from _shop import OrderStatus

from niceeval import EvalContext, define_eval
from niceeval.expect import equals, includes, matches


@define_eval(tags=["tools"])
async def looks_up_an_order(t: EvalContext) -> None:
    await t.send("Where is order 1234?")
    t.check(t.reply, includes("shipped"))
    t.called_tool("lookup_order", input={"order_id": "1234"}, count=1)
    t.no_failed_actions()
    t.max_tokens(20_000)


@define_eval(tags=["tools", "errors"])
async def a_refused_cancellation_is_a_failed_tool_call(t: EvalContext) -> None:
    await t.send("Please cancel order 1234")
    t.called_tool("cancel_order", input={"order_id": "1234"}, status="failed")
    t.check(t.reply, includes("could not"))


@define_eval(tags=["structured"])
async def status_as_data(t: EvalContext) -> None:
    turn = await t.send("What is the status of order 5678?", output=OrderStatus)
    t.require(turn.data, matches(OrderStatus))
    t.check(turn.data.status, equals("processing"))


@define_eval(tags=["conversation"])
async def follow_up_keeps_the_order_in_mind(t: EvalContext) -> None:
    await t.send("Where is order 5678?")
    await t.send("Then cancel it, please.")
    t.check(t.reply, includes("cancelled"))
    t.tool_order(["lookup_order", "cancel_order"])
