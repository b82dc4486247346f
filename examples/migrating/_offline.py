"""Offline stand-in for OpenAI: niceeval.testing's local server playing the model under test and the judge.

The model knows its capitals but mixes up two (Australia, Canada), so each suite has passes and misses to
compare. The judge grades a rubric by looking for the capital the rubric names in the output. With
OPENAI_API_KEY set, nothing is started and the real API answers instead.
"""

from __future__ import annotations

import os
import re

from niceeval.testing import LLMRequest, LLMServer, ReplyLike

CAPITALS = {
    "France": "Paris", "Japan": "Tokyo", "Australia": "Canberra", "Canada": "Ottawa", "Peru": "Lima",
    "Kenya": "Nairobi", "Norway": "Oslo", "Egypt": "Cairo",
}
MIX_UPS = {"Australia": "Sydney", "Canada": "Toronto"}
_OUTPUT = re.compile(r"<output-(\w+)>\n(.*?)\n</output-\1>", re.S)
_CHOICE = re.compile(r"^([A-Z])\) (.+)$", re.M)


def _answer(request: LLMRequest) -> str:
    text = request.last_user_text
    country = next((c for c in CAPITALS if c in text), None)
    if country is None:
        return "Which country do you mean?"
    said = MIX_UPS.get(country, CAPITALS[country])
    if "ANSWER: $LETTER" in text:  # a multiple-choice question: the letter of the city it believes
        letter = next((m[1] for m in _CHOICE.finditer(text) if m[2].strip() == said), "A")
        return f"ANSWER: {letter}"
    return f"The capital of {country} is {said}."


def _grade(request: LLMRequest) -> dict[str, object]:
    text = request.last_user_text
    found = _OUTPUT.search(text)
    output = found.group(2) if found else ""
    rubric = text[: found.start()] if found else text
    wanted = [city for city in CAPITALS.values() if city in rubric]
    right = bool(wanted) and all(city in output for city in wanted)
    reason = f"the answer {'names' if right else 'does not name'} {', '.join(wanted) or 'a capital'}"
    return {"reason": reason, "pass": right, "score": 1.0 if right else 0.0}


def scripted(request: LLMRequest) -> ReplyLike:
    """The judge when a structured answer is asked for, the model under test otherwise."""
    return _grade(request) if request.output_schema is not None else _answer(request)


def start_offline() -> None:
    """Without OPENAI_API_KEY: start the local server (once per process) and point the OpenAI clients at it."""
    if os.environ.get("OPENAI_API_KEY"):
        return
    os.environ["OPENAI_BASE_URL"] = LLMServer(scripted).start().base_url
    os.environ["OPENAI_API_KEY"] = "offline"
