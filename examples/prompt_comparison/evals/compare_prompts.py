"""Which system prompt answers capital-city questions better? Each case runs once per prompt; max-score picks."""

from niceeval import define_eval
from niceeval.expect import includes

# The baseline first: max-score gives a tie to the first variant.
PROMPTS = {
    "careful": "Answer in one full sentence, and double-check which city is the capital.",
    "terse": "Answer with the city name only.",
}


@define_eval(cases="data/capitals.jsonl", variants={"prompt": PROMPTS}, tags=["capitals"])
async def capital(t):
    await t.send(f"What is the capital of {t.case['country']}?")
    t.check(t.reply, includes(t.case["capital"]))
    t.judge.rubric("The answer names {capital} as the capital of {country}.", rubric_prompt="graders/capital.txt")
    t.max_score(weights={"includes": 2}).soft()
