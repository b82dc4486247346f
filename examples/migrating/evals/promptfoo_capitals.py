"""promptfooconfig.yaml written by hand: the same tests, prompt and checks as niceeval code."""

import re

from niceeval import define_eval
from niceeval.expect import excludes, includes, satisfies

TESTS = [
    {"id": "France", "country": "France", "capital": "Paris"},
    {"id": "Australia", "country": "Australia", "capital": "Canberra", "not": "Sydney"},
    {"id": "Japan", "country": "Japan", "capital": "Tokyo", "exact": True},
    {"id": "Canada", "country": "Canada", "capital": "Ottawa", "any_of": ["Ottawa", "Toronto"]},
]


@define_eval(cases=TESTS)
async def capitals(t):
    country, capital = t.case["country"], t.case["capital"]
    await t.send(f"What is the capital of {country}? Answer in one sentence.")
    t.check(t.reply, excludes(re.compile("which country", re.I)))
    t.judge.rubric(f"The answer names {capital} as the capital of {country}.").gate()
    if "any_of" in t.case:
        t.check(t.reply, satisfies(lambda reply: any(c in reply for c in t.case["any_of"]), "names one of them"))
    elif t.case.get("exact"):
        t.check(t.reply, includes(re.compile(rf"^The capital of {country} is {capital}\.$")))
    else:
        t.check(t.reply, includes(re.compile(re.escape(capital), re.I)))
    if "not" in t.case:
        t.check(t.reply, excludes(t.case["not"]))
