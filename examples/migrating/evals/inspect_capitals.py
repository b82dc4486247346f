"""inspect/capitals.jsonl written by hand: includes() on the target, multiple choice by letter."""

import re

from niceeval import define_eval
from niceeval.expect import includes

QUESTIONS = [
    {"id": "norway", "question": "What is the capital of Norway?", "target": "Oslo"},
    {"id": "egypt", "question": "What is the capital of Egypt?", "target": "Cairo"},
]
CHOICES = [
    {"id": "australia", "question": "What is the capital of Australia?", "choices": ["Sydney", "Canberra", "Melbourne"],
     "answer": "B"},
    {"id": "japan", "question": "What is the capital of Japan?", "choices": ["Kyoto", "Tokyo"], "answer": "B"},
]


@define_eval(cases=QUESTIONS)
async def answers(t):
    await t.send(t.case["question"])
    t.check(t.reply, includes(re.compile(re.escape(t.case["target"]), re.I)))


@define_eval(cases=CHOICES)
async def multiple_choice(t):
    letters = [chr(ord("A") + i) for i in range(len(t.case["choices"]))]
    listed = "\n".join(f"{letter}) {choice}" for letter, choice in zip(letters, t.case["choices"], strict=True))
    await t.send(
        "Answer the following multiple choice question. The entire content of your response should be of the "
        f"following format: 'ANSWER: $LETTER' (without quotes) where LETTER is one of {','.join(letters)}.\n\n"
        f"{t.case['question']}\n\n{listed}"
    )
    t.check(t.reply, includes(re.compile(rf"ANSWER\s*:\s*{t.case['answer']}\b", re.I)))
