"""Every judge method sends, byte for byte, the request it has always sent: a change to the prompt text, the data
blocks, the answer schema or the order they come in changes a digest here. The judge cache is keyed on the prompt,
so a silent change would also throw away every cached verdict."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from judge_helpers import RUBRIC_PASS, Run

from niceeval.judge import Judge
from niceeval.testing import LLMRequest, Reply

SOURCE = "The refund policy: refunds are paid within 14 days of the return reaching the warehouse."
TRANSCRIPT = "User: My order 1234 is late.\nAssistant: Order 1234 ships tomorrow."


def _answer(request: LLMRequest) -> Reply:
    """A valid answer for whichever family asked, read off the forced schema."""
    properties = request.output_schema["properties"]
    if "choice" in properties:
        return Reply(data={"reason": "r", "choice": properties["choice"]["enum"][0]})
    if "label" in properties:
        return Reply(data={"reason": "r", "label": properties["label"]["enum"][0]})
    if "result" in properties:
        return Reply(data={"reason": "r", "result": 0.5})
    if "steps" in properties:
        return Reply(data={"steps": ["Check it."], "assessment": "fine", "score": 4})
    return Reply(data=RUBRIC_PASS)


CALLS: dict[str, Callable[[Judge], object]] = {
    "rubric": lambda t: t.rubric("Is the reply polite?"),
    "g_eval": lambda t: t.g_eval("Is the reply polite?"),
    "summarizes": lambda t: t.summarizes(SOURCE),
    "vote": lambda t: t.vote(["Is the reply polite?", "Is it short?"]),
    "autoevals.factuality": lambda t: t.autoevals.factuality("Refunds take 14 days."),
    "autoevals.closed_qa": lambda t: t.autoevals.closed_qa("Does it name a time?"),
    "autoevals.summary": lambda t: t.autoevals.summary("Refunds in 14 days.", input=SOURCE),
    "rag.faithfulness": lambda t: t.rag.faithfulness([SOURCE, "Returns are free."]),
    "rag.answer_relevance": lambda t: t.rag.answer_relevance(),
    "rag.context_relevance": lambda t: t.rag.context_relevance(SOURCE),
    "rag.context_recall": lambda t: t.rag.context_recall(SOURCE, "Refunds take 14 days."),
    "conversation.goal_completion": lambda t: t.conversation.goal_completion("Learn when it ships.", on=TRANSCRIPT),
    "conversation.role_adherence": lambda t: t.conversation.role_adherence("A support agent", on=TRANSCRIPT),
    "conversation.knowledge_retention": lambda t: t.conversation.knowledge_retention(on=TRANSCRIPT),
    "openai.score_model": lambda t: t.openai.score_model("Rate the politeness.", range=(0, 10)),
    "openai.label_model": lambda t: t.openai.label_model("Tone?", labels=["polite", "rude"], passing_labels=["polite"]),
    "capped": lambda t: t.rubric("Is the reply polite?", on="x" * 9000, max_chars=6000),
}

PINNED = {
    "rubric": "f37ffb1dbf91da77",
    "g_eval": "d29e674cfbf8ba33",
    "summarizes": "ec255fad8f0f8fdf",
    "vote": "ef84583dadc15aa1",
    "autoevals.factuality": "65fe25d40847735f",
    "autoevals.closed_qa": "c11e455cea11decb",
    "autoevals.summary": "3248d4a83d144d59",
    "rag.faithfulness": "f4186da7dd42417e",
    "rag.answer_relevance": "3a7ac46119773d53",
    "rag.context_relevance": "51a3ae56ddc639d5",
    "rag.context_recall": "9242d70ecdf30767",
    "conversation.goal_completion": "d460850d6e9376a1",
    "conversation.role_adherence": "041bba6d897ac636",
    "conversation.knowledge_retention": "185139db57f09881",
    "openai.score_model": "9cfc0567398312ce",
    "openai.label_model": "ab808729c0ddd84a",
    "capped": "39347b8fd03bbb8f",
}


def _digest(bodies: list[dict[str, Any]]) -> str:
    """One digest of what the requests sent (prompt and answer schema), whatever order concurrent asks came in."""
    sent = sorted(
        json.dumps({"messages": body["messages"], "format": body.get("response_format")}, sort_keys=True)
        for body in bodies
    )
    return hashlib.sha256("\n".join(sent).encode()).hexdigest()[:16]


@pytest.mark.parametrize("method", list(CALLS))
def test_each_judge_method_sends_the_prompt_it_always_sent(run: Run, method: str) -> None:
    run.server.set_script(_answer)
    run(CALLS[method])
    assert _digest([request.body for request in run.server.requests]) == PINNED[method]
