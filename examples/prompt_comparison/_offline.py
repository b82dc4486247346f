"""Offline stand-in for OpenAI: niceeval.testing's local server playing both the model under test and the judge.

The model follows its system prompt: the terse prompt gets a few capitals wrong (the classic mix-ups), the careful
one gets them right. The judge grades a rubric by looking the capital up, and is a little lenient (it passes an
answer that names the right city anywhere, even next to a wrong one): calibration against human labels shows it.
With OPENAI_API_KEY set, nothing is started and the real API answers instead.
"""

from __future__ import annotations

import os
import re

from niceeval.testing import LLMRequest, LLMServer, ReplyLike

CAPITALS = {
    "France": "Paris", "Japan": "Tokyo", "Australia": "Canberra", "Canada": "Ottawa", "Brazil": "Brasilia",
    "Turkey": "Ankara", "Kenya": "Nairobi", "Peru": "Lima", "Norway": "Oslo", "Egypt": "Cairo",
    "Vietnam": "Hanoi", "Chile": "Santiago", "Poland": "Warsaw", "Morocco": "Rabat", "Nigeria": "Abuja",
    "Switzerland": "Bern", "New Zealand": "Wellington", "India": "New Delhi", "Spain": "Madrid", "Ghana": "Accra",
}
MIX_UPS = {
    "Australia": "Sydney", "Canada": "Toronto", "Turkey": "Istanbul", "Switzerland": "Zurich", "Morocco": "Casablanca",
}
_OUTPUT = re.compile(r"<output-(\w+)>\n(.*?)\n</output-\1>", re.S)


def _country(text: str) -> str | None:
    return next((country for country in CAPITALS if country in text), None)


def _answer(request: LLMRequest) -> str:
    system = next((m.content for m in request.messages if m.role == "system"), "")
    country = _country(request.last_user_text)
    if country is None:
        return "Which country do you mean?"
    if "city name only" in system:
        return MIX_UPS.get(country, CAPITALS[country])
    return f"The capital of {country} is {CAPITALS[country]}."


def _grade(request: LLMRequest) -> dict[str, object]:
    text = request.last_user_text
    found = _OUTPUT.search(text)
    output = found.group(2) if found else ""
    country = _country(text[: found.start()] if found else text)
    right = country is not None and CAPITALS[country].lower() in output.lower()
    reason = f"the answer {'names' if right else 'does not name'} {CAPITALS.get(country or '', '?')}"
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
