"""Evals for the FAQ agent."""

import re

from pydantic import BaseModel

from niceeval import EvalContext, define_eval
from niceeval.expect import excludes, includes, matches, satisfies, similarity


class Answer(BaseModel):
    topic: str
    answer: str


@define_eval(tags=["faq"])
async def shipping_time(t: EvalContext) -> None:
    await t.send("How long does shipping take?")
    t.check(t.reply, includes(re.compile(r"\d+ days?")))
    t.check(t.reply, excludes("I don't know"))
    t.check(t.reply, similarity("Orders ship within 2 days.").at_least(0.3))


@define_eval(tags=["faq", "structured"])
async def structured_answer(t: EvalContext) -> None:
    turn = await t.send("Answer as JSON: when do orders ship?")
    t.require(turn.data, matches(Answer))
    t.check(turn.data, satisfies(lambda d: d["topic"] == "shipping", "topic is shipping"))
