"""The example suite: every matcher, check vs require, gate vs soft, and skip, against an offline agent."""

import re

from evals._support_agent import Intent
from niceeval import EvalContext, define_eval
from niceeval.expect import equals, excludes, includes, make_assertion, matches, satisfies, similarity


@define_eval(tags=["support", "refund"])
async def refund_request(t: EvalContext) -> None:
    """A refund request names the order and promises the refund."""
    await t.send("I want a refund for order 1234")
    t.check(t.reply, includes("refund"))  # gate by default: a miss fails the eval
    t.check(t.reply, includes(re.compile(r"order #?\d+")))  # a compiled regex is searched
    t.check(t.reply, excludes("unfortunately"))
    t.check(t.reply, similarity("I'm sorry about order #1234. Your refund is on its way.").at_least(0.4))


@define_eval(tags=["support", "structured"])
async def classifies_intent(t: EvalContext) -> None:
    """Structured output: require a valid shape first, then check its fields."""
    turn = await t.send("Classify this as JSON: I want a refund for order 1234")
    t.require(turn.data, matches(Intent))  # stops the eval here if the shape is wrong
    t.check(turn.data, equals(Intent(intent="refund", order_id="1234")))
    t.check(turn.message, matches({"type": "object", "required": ["intent"]}))  # JSON Schema on the JSON text


@define_eval(tags=["support"])
def opening_hours(t):  # a plain `def` eval works too; it runs in a worker thread
    """Plain-function evals get a synchronous `t.send`."""
    t.send("What are your opening hours?")
    t.check(t.reply, includes("Monday"))
    t.check(t.reply, satisfies(lambda text: len(text.split()) < 40, "reply under 40 words"))


def _signed(text: object) -> float:
    """A custom score: 1.0 when the reply is signed, 0.5 when only polite."""
    if not isinstance(text, str):
        return 0.0
    return 1.0 if "support team" in text else 0.5 if "regards" in text.lower() else 0.0


signed = make_assertion(name="signed by the team", score=_signed)


@define_eval(tags=["support", "soft"])
async def asks_for_order_number(t: EvalContext) -> None:
    """A soft miss: the reply is fine but not close to the ideal wording, so the eval is `scored`."""
    await t.send("Where is my package?")
    t.check(t.reply, signed)
    t.check(t.reply, includes("order number"))
    ideal = "Sorry for the wait! Could you share your order number so I can track the package?"
    t.check(t.reply, similarity(ideal).at_least(0.9).label("close to the ideal reply"))


@define_eval(tags=["support"])
async def escalation_policy(t: EvalContext) -> None:
    """Skipped until the escalation flow exists: shows `t.skip`."""
    t.skip("escalation is not implemented in the example agent yet")
