"""The prompt a judge request sends: the family's prompt (or the author's whole-prompt template) over the data
blocks, within the request's cap (`_cap`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from niceeval.judge._cap import Blocks, Cut, capped
from niceeval.judge._families import Family
from niceeval.judge._prompts import Messages, build_messages
from niceeval.judge._request import JudgeRequest
from niceeval.judge._templates import placeholders, templated_messages


@dataclass(frozen=True, slots=True)
class Sent:
    """What one request sends, and what the assertion records of it."""

    messages: Messages
    """The prompt, within the cap."""
    cuts: list[Cut]
    """The data blocks cut to fit the cap."""
    input: str | None
    """The user's input as the judge saw it (cut or whole), recorded with each call; None when none was shown."""
    expected: str
    """The assertion's `expected`: the criteria, else the first data shown besides the input (a reference, a
    source)."""


def request_prompt(request: JudgeRequest, text: str, asked: str | None, max_chars: int) -> Sent:
    """The prompt of `request` judging `text`, shown with the user's input `asked`, at most `max_chars` long."""
    template, criteria = request.prompt, request.criteria
    if template is not None and criteria is not None:

        def fill(blocks: Blocks, note: str) -> Messages:
            output = blocks[0][1]
            return templated_messages(
                request.family, template.template, criteria, output, template.variables, template.where, note=note
            )

        sent = capped(fill, [("output", text)], max_chars, request.where)
        # the template decides where (and whether) `{input}` appears
        shown = asked if "input" in placeholders(template.template) else None
        return Sent(sent.messages, sent.cuts, shown, criteria)
    blocks = [*input_block(asked, request.input_label), *request.context, ("output", text)]
    sent = capped(family_prompt(request.family, criteria), blocks, max_chars, request.where)
    shown = sent.sent(request.input_label)
    expected = criteria if criteria is not None else next((t for n, t in blocks[:-1] if n != "input"), "")
    return Sent(sent.messages, sent.cuts, shown, expected)


def family_prompt(family: Family, criteria: str | None) -> Callable[[Blocks, str], Messages]:
    """How a family's prompt is built over data blocks and a note (for `capped`)."""

    def build(blocks: Blocks, note: str) -> Messages:
        return build_messages(family, criteria, blocks, note=note)

    return build


def embedded(blocks: Blocks, note: str) -> Messages:
    """The two texts `similar` embeds (nothing tells an embedding model about a cut: the reason says it)."""
    return [{"role": label, "content": text} for label, text in blocks]


def input_block(asked: str | None, label: str) -> Blocks:
    """The user's input as a data block, when there is one worth showing."""
    return [] if asked is None or not asked.strip() else [(label, asked)]
