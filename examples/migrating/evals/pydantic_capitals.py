"""pydantic_evals/capitals.yaml written by hand: each case's Contains, IsInstance and the LLMJudge rubric."""

import re

from niceeval import define_eval
from niceeval.expect import includes, satisfies

CASES = [
    {"id": "peru", "input": "What is the capital of Peru?", "expected_output": "Lima"},
    {"id": "canada", "input": "What is the capital of Canada?", "expected_output": "Ottawa"},
    {"id": "kenya", "input": "What is the capital of Kenya?", "expected_output": "Nairobi", "ignore_case": True},
]


@define_eval(cases=CASES)
async def capitals(t):
    expected = t.case["expected_output"]
    await t.send(t.case["input"])
    flags = re.I if t.case.get("ignore_case") else 0
    t.check(t.reply, includes(re.compile(re.escape(expected), flags)))
    t.check(t.reply, satisfies(lambda reply: isinstance(reply, str), "is a str"))
    t.judge.rubric(f"The answer names the expected capital.\n\nThe expected output is: {expected}").gate()
