"""Evals for the order desk agent, recorded through the bridge: tool calls, a failing tool, a follow-up, cost."""

from niceeval import EvalContext, define_eval
from niceeval.expect import includes


@define_eval(tags=["tools"])
async def looks_up_an_order(t: EvalContext) -> None:
    await t.send("Where is order 1234?")
    t.check(t.reply, includes("shipped"))
    t.called_tool("lookup_order", input={"order_id": "1234"}, count=1)
    t.no_failed_actions()


@define_eval(tags=["tools", "errors"])
async def an_unknown_order_is_a_failed_tool_call(t: EvalContext) -> None:
    await t.send("Where is order 9999?")
    t.called_tool("lookup_order", input={"order_id": "9999"}, status="failed")
    t.check(t.reply, includes("could not"))


@define_eval(tags=["conversation"])
async def follow_up_keeps_the_order_in_mind(t: EvalContext) -> None:
    await t.send("Where is order 5678?")
    await t.send("Has it shipped yet?")
    t.check(t.reply, includes("processing"))
    t.called_tool("lookup_order", input={"order_id": "5678"}, count=2)


@define_eval(tags=["cost"])
async def stays_within_budget(t: EvalContext) -> None:
    await t.send("Where is order 1234?")
    t.max_tokens(20_000)
    t.max_cost(0.01)  # priced from the usage the bridge recorded (openai/gpt-5-mini)
