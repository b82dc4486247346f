"""The judge families: what each asks the model, the answer schema it forces, and how an answer becomes a score.

Every prompt here is niceeval's own. The choice families (factuality, closed_qa, summarizes) follow the idea of
the autoevals graders: the model picks one labelled choice and each choice maps to a fixed score, which is more
stable than asking for a number. `rubric` is direct scoring with a pass flag (promptfoo's rule: it passes when the
judge says pass and the score reaches the threshold). `g_eval` makes the model write its evaluation steps before
it scores, on a 1-5 scale mapped onto [0, 1].
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class AnswerError(ValueError):
    """The model's answer does not fit the family's schema; the message is sent back in the repair turn."""


@dataclass(frozen=True, slots=True)
class Parsed:
    """A valid answer, scored."""

    score: float
    passed: bool | None
    """The judge's own pass flag (rubric only)."""
    reason: str
    answer: dict[str, Any]
    """The validated answer, as stored in the cache."""


class _ChoiceAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    reason: str
    choice: str


class _RubricAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    reason: str
    passed: bool = Field(alias="pass")
    score: float = Field(ge=0.0, le=1.0)


class _GEvalAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    steps: list[str] = Field(min_length=1)
    assessment: str
    score: int = Field(ge=1, le=5)


_Answer = TypeVar("_Answer", bound=BaseModel)


def validated(model: type[_Answer], data: object) -> _Answer:
    """`data` as the family's answer model; raises `AnswerError` saying every problem (for the repair turn)."""
    if not isinstance(data, dict):
        raise AnswerError(f"the answer must be a JSON object with the required fields, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in exc.errors())
        raise AnswerError(problems) from None


def object_schema(properties: dict[str, Any]) -> dict[str, Any]:
    # Strict structured output (OpenAI) wants every property required and nothing else allowed.
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


REASON_FIELD = {"type": "string", "description": "One or two sentences: why this verdict, citing the data."}


@dataclass(frozen=True, kw_only=True, slots=True)
class Family:
    """One kind of judge question: its instructions, the answer schema it forces, and how an answer is scored."""

    name: str
    task: str
    """The grading instructions; `{criteria}` is replaced by the author's criteria, when the family takes one."""
    schema: dict[str, Any]
    parse: Callable[[object], Parsed]
    """Validate an answer and score it; raises `AnswerError` (said in words, for the repair turn)."""
    embeds: bool = False
    """Not a chat question: the two messages' texts are embedded and their cosine similarity is the answer."""


def _choice_family(name: str, task: str, choices: dict[str, tuple[float, str]]) -> Family:
    listed = "\n".join(f"- {label}: {meaning}" for label, (_, meaning) in choices.items())
    scores = {label: score for label, (score, _) in choices.items()}

    def parse(data: object) -> Parsed:
        answer = validated(_ChoiceAnswer, data)
        key = answer.choice.strip().lower()
        if key not in scores:
            raise AnswerError(f"choice must be one of {', '.join(scores)}; got {answer.choice!r}")
        return Parsed(scores[key], None, answer.reason, {"reason": answer.reason, "choice": key})

    return Family(
        name=name,
        task=f"{task}\n\nPick exactly one choice:\n{listed}",
        schema=object_schema({"reason": REASON_FIELD, "choice": {"type": "string", "enum": list(choices)}}),
        parse=parse,
    )


def _parse_rubric(data: object) -> Parsed:
    answer = validated(_RubricAnswer, data)
    return Parsed(answer.score, answer.passed, answer.reason, answer.model_dump(by_alias=True))


def _parse_g_eval(data: object) -> Parsed:
    answer = validated(_GEvalAnswer, data)
    steps = " ".join(f"{i}. {step.strip()}" for i, step in enumerate(answer.steps, start=1))
    reason = f"{answer.assessment} (steps: {steps}; score {answer.score}/5)"
    return Parsed((answer.score - 1) / 4, None, reason, answer.model_dump())


CLOSED_QA = _choice_family(
    "closed_qa",
    "Decide whether the output meets this criterion:\n{criteria}",
    {
        "yes": (1.0, "the output meets the criterion."),
        "no": (0.0, "the output does not meet the criterion, or meets it only in part."),
    },
)

FACTUALITY = _choice_family(
    "factuality",
    "Compare the facts the output states with the facts of the reference answer, which an expert wrote. "
    "Wording, style, length and formatting do not matter; only factual content does.",
    {
        "same": (1.0, "the output states the same facts as the reference."),
        "differs_harmlessly": (
            1.0,
            "the two differ, but in no way that matters for factual correctness (detail level, phrasing).",
        ),
        "superset": (0.6, "the output states all the reference's facts, plus further facts that agree with it."),
        "subset": (0.4, "the output states only some of the reference's facts, and nothing that conflicts."),
        "conflicts": (0.0, "the output states something that contradicts the reference."),
    },
)

SUMMARY = _choice_family(
    "summary",
    "Compare two summaries of the source text: the reference summary, which an expert wrote, and the output. "
    "Differences in style, grammar or punctuation do not matter. Decide which one describes the source better.",
    {
        "reference": (0.0, "the reference summary describes the source better than the output."),
        "output": (1.0, "the output describes the source better than the reference, or equally well."),
    },
)

SUMMARIZES = _choice_family(
    "summarizes",
    "Judge the output as a summary of the source document.",
    {
        "faithful_and_complete": (1.0, "every claim is backed by the source and the main points are covered."),
        "faithful_but_incomplete": (0.5, "every claim is backed by the source, but main points are missing."),
        "unfaithful": (0.0, "the output claims something the source does not say, or contradicts it."),
        "not_a_summary": (0.0, "the output does not try to summarise the source."),
    },
)

RUBRIC = Family(
    name="rubric",
    task=(
        "Grade the output against this rubric:\n{criteria}\n\n"
        "If the rubric defines scoring anchors or levels, use them. Give a score between 0 and 1, where 1 means "
        "the output fully meets the rubric, and set pass to true only when the output meets the rubric."
    ),
    schema=object_schema(
        {
            "reason": REASON_FIELD,
            "pass": {"type": "boolean", "description": "True only when the output meets the rubric."},
            "score": {"type": "number", "description": "Between 0 and 1 inclusive."},
        }
    ),
    parse=_parse_rubric,
)

G_EVAL = Family(
    name="g_eval",
    task=(
        "Evaluate the output against these criteria:\n{criteria}\n\n"
        "Work in this order. First, in steps, write the concrete evaluation steps these criteria call for, as "
        "short imperative sentences, before judging anything. Then, in assessment, apply each step to the "
        "output and note the evidence. Last, give score: a whole number from 1 (does not meet the criteria at "
        "all) to 5 (fully meets them)."
    ),
    schema=object_schema(
        {
            "steps": {"type": "array", "items": {"type": "string"}, "description": "Evaluation steps, in order."},
            "assessment": {"type": "string", "description": "Each step applied to the output, with evidence."},
            "score": {"type": "integer", "description": "1 to 5."},
        }
    ),
    parse=_parse_g_eval,
)

FAITHFULNESS = _choice_family(
    "faithfulness",
    "Judge whether the output is faithful to the context it was given (retrieved documents): break the output "
    "into its claims and check each against the context. Knowledge the context does not state counts as "
    "unsupported, even when it is true.",
    {
        "fully_supported": (1.0, "every claim of the output is stated in, or follows from, the context."),
        "mostly_supported": (0.5, "the main claims are supported, but some detail is not in the context."),
        "unsupported": (0.0, "a main claim is not in the context, or contradicts it."),
    },
)

ANSWER_RELEVANCE = _choice_family(
    "answer_relevance",
    "Judge whether the output answers the question in the input: directly, completely and without going off "
    "topic. Whether the answer is true does not matter here, only whether it addresses the question.",
    {
        "relevant": (1.0, "the output answers the question asked, and stays on it."),
        "partly_relevant": (0.5, "the output addresses the question only in part, or wanders off it."),
        "irrelevant": (0.0, "the output does not answer the question."),
    },
)

CONTEXT_RELEVANCE = _choice_family(
    "context_relevance",
    "Judge whether the context (retrieved documents, shown as the output) holds what is needed to answer the "
    "question in the input.",
    {
        "relevant": (1.0, "the context holds what the answer needs, with little unrelated text."),
        "partly_relevant": (0.5, "the context holds some of what the answer needs, or much unrelated text."),
        "irrelevant": (0.0, "the context does not help to answer the question."),
    },
)

CONTEXT_RECALL = _choice_family(
    "context_recall",
    "Judge whether the context (retrieved documents, shown as the output) contains the facts of the reference "
    "answer, which an expert wrote: could the reference be written from the context alone?",
    {
        "all": (1.0, "every fact of the reference is in the context."),
        "some": (0.5, "some facts of the reference are in the context, others are missing."),
        "none": (0.0, "the context holds none of the reference's facts."),
    },
)

GOAL_COMPLETION = _choice_family(
    "goal_completion",
    "Judge the whole conversation (the output is its transcript): did the assistant get the user to this goal?\n"
    "{criteria}",
    {
        "completed": (1.0, "the goal was reached by the end of the conversation."),
        "partly_completed": (0.5, "progress was made, but the goal was not fully reached."),
        "not_completed": (0.0, "the goal was not reached, or the assistant worked against it."),
    },
)

ROLE_ADHERENCE = _choice_family(
    "role_adherence",
    "Judge the whole conversation (the output is its transcript): did the assistant keep to this role in every "
    "turn, whatever the user asked?\n{criteria}",
    {
        "in_role": (1.0, "every assistant turn stays in the role."),
        "slipped": (0.5, "the assistant left the role in a minor way, once or twice."),
        "out_of_role": (0.0, "the assistant dropped the role, or acted against it."),
    },
)

KNOWLEDGE_RETENTION = _choice_family(
    "knowledge_retention",
    "Judge the whole conversation (the output is its transcript): does the assistant remember what the user "
    "told it earlier? Asking again for something already given, or contradicting it, is forgetting.",
    {
        "retained": (1.0, "the assistant uses what it was told and never asks for it again."),
        "forgot_some": (0.5, "the assistant forgot or re-asked one detail the user had given."),
        "forgot": (0.0, "the assistant lost track of what the user said."),
    },
)


def _parse_similarity(data: object) -> Parsed:
    if not isinstance(data, dict) or not isinstance(data.get("cosine"), int | float):
        raise AnswerError("expected {'cosine': number}")
    cosine = float(data["cosine"])
    return Parsed(min(max(cosine, 0.0), 1.0), None, f"cosine similarity {cosine:.3f}", {"cosine": cosine})


SIMILAR = Family(
    name="similar",
    task="",
    schema={"embeddings": "cosine"},
    parse=_parse_similarity,
    embeds=True,
)
