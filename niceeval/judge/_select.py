"""select-best: one judge question that sees every variant's output for a case and names the best one.

The candidates are labelled A, B, C... in an order shuffled from a seed (the case, the run and the criteria), so
each case and run shows them in its own order (position bias averages out) while the prompt stays identical when
the same comparison is asked again (the verdict cache still works). Each output is untrusted data, wrapped like
every judged text.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from niceeval.judge._cap import capped, cut_reason
from niceeval.judge._engine import Consultation, Env, decide
from niceeval.judge._families import REASON_FIELD, AnswerError, Family, Parsed, object_schema
from niceeval.judge._prompts import Messages, build_messages
from niceeval.providers import ModelRef

_TASK = (
    "Several candidate outputs were produced for the same input, one per variant of the system under test. "
    "Compare them with each other and pick the single candidate that best meets this criterion:\n{criteria}\n\n"
    "The candidates' order and labels mean nothing; do not favour a position. Judge only what each says."
)


def _labels(count: int) -> list[str]:
    if count <= 26:
        return [chr(ord("A") + i) for i in range(count)]
    return [str(i + 1) for i in range(count)]


def select_family(count: int) -> Family:
    """The judge family for `count` candidates: the answer names one label."""
    labels = _labels(count)

    def parse(data: object) -> Parsed:
        reason, best = _reason_and_best(data)
        key = best.strip().upper()
        if key not in labels:
            raise AnswerError(f"best must be one of {', '.join(labels)}; got {best!r}")
        return Parsed(1.0, None, reason, {"reason": reason, "best": key})

    best_field = {"type": "string", "enum": labels, "description": "The label of the best candidate."}
    return Family(
        name="select_best",
        task=_TASK,
        schema=object_schema({"reason": REASON_FIELD, "best": best_field}),
        parse=parse,
    )


def _reason_and_best(data: object) -> tuple[str, str]:
    if not isinstance(data, dict):
        raise AnswerError(f"the answer must be a JSON object with reason and best, got {type(data).__name__}")
    reason, best = data.get("reason"), data.get("best")
    if not isinstance(reason, str) or not isinstance(best, str):
        raise AnswerError("the answer needs two strings: reason, and best (a candidate's label)")
    return reason, best


@dataclass(frozen=True, kw_only=True, slots=True)
class Choice:
    """What the judge said: which output it picked (None: no verdict), in what order it saw them, and the record."""

    picked: int | None
    """Index into the outputs as given (not the shown order)."""
    shown: list[int]
    """The outputs' indexes in the order the judge saw them (labels A, B, ... in this order)."""
    labels: list[str]
    consultations: list[Consultation]
    cut: str = ""
    """How the candidates were cut to fit the prompt's cap (`max_chars`), for the reason; empty when none was."""

    def label_of(self, index: int) -> str:
        """The label the output at `index` had in the prompt."""
        return self.labels[self.shown.index(index)]


def shuffled(count: int, seed: str) -> list[int]:
    """The order the candidates are shown in: a permutation of range(count), fixed by `seed`."""
    order = list(range(count))
    random.Random(seed).shuffle(order)
    return order


async def select_best(
    env: Env,
    criteria: str,
    outputs: Sequence[str],
    models: tuple[ModelRef, ModelRef | None],
    seed: str,
    *,
    asked: str | None = None,
) -> Choice:
    """Ask the judge (then its fallback) which of `outputs` best meets `criteria`, as answers to `asked` (the
    message the first variant's eval last sent, shown as the input when there is one)."""
    order = shuffled(len(outputs), seed)
    labels = _labels(len(outputs))
    family = select_family(len(outputs))
    data = [(f"candidate-{labels[pos]}", outputs[index]) for pos, index in enumerate(order)]
    if asked is not None and asked.strip():
        data.insert(0, ("input", asked))

    def build(blocks: list[tuple[str, str]], note: str) -> Messages:
        return build_messages(family, criteria, blocks, note=note)

    sent = capped(build, data, env.max_chars, "t.select_best")
    consultations = await decide(env, sent.messages, family, models[0], models[1], judged_input=sent.sent("input"))
    parsed = consultations[-1].parsed
    picked = None if parsed is None else order[labels.index(_answer(parsed.answer))]
    return Choice(
        picked=picked,
        shown=order,
        labels=labels,
        consultations=consultations,
        cut=cut_reason(sent.cuts, env.max_chars),
    )


def _answer(answer: Mapping[str, object]) -> str:
    return str(answer["best"])
