"""What a judge is sent, capped: a prompt of at most `max_chars` characters, whatever the judged text holds.

The instructions (system prompt, task, criteria) are kept whole; the data blocks (the output, the input, any
reference or context) share what is left. Blocks that fit their share are sent whole and the longest are cut in
the middle, keeping their start and their end around a marker that says how much is missing. The task then tells
the judge which blocks were cut and by how much (that note is outside the data, so the data cannot forge it), and
the assertion's reason says so too. Cutting is deterministic, so a capped prompt still hits the judge cache.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from niceeval._core.errors import UsageError
from niceeval.judge._prompts import Messages

DEFAULT_MAX_CHARS = 100_000
"""The default cap of one judge prompt, in characters (docs/judge.md says why this number)."""
CHARS_PER_TOKEN = 4
"""A rough count for English text, used only to estimate what a capped prompt costs (`--dry-run`)."""
_MARKER = "\n[... {cut:,} characters cut here ...]\n"
_LEAST_SHOWN = 200
"""Fewer characters of data per block than this is no longer worth judging: the cap is then a usage error."""
_WORD_SEARCH = 1_024
"""How far a cut moves to the edge of the word it falls in: longer than API keys, passwords and most tokens."""
_UP_TO_LAST_SPACE = re.compile(r".*\s", re.DOTALL)
_WORD = re.compile(r"\S*")

Blocks = list[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class Cut:
    """One data block sent in part."""

    label: str
    total: int
    """Characters the block had."""
    shown: int
    """Characters of it sent (the marker not counted)."""


def size(messages: Messages) -> int:
    """The characters of a prompt: every message's text."""
    return sum(len(message["content"]) for message in messages)


@dataclass(frozen=True, slots=True)
class Capped:
    """A prompt within its cap: the messages, the data blocks as sent, and the blocks that were cut."""

    messages: Messages
    blocks: Blocks
    cuts: list[Cut]

    def sent(self, label: str) -> str | None:
        """The text of the block labelled `label` as it was sent (cut or whole), or None when there is none."""
        return next((text for name, text in self.blocks if name == label), None)


def capped(
    build: Callable[[Blocks, str], Messages], blocks: Sequence[tuple[str, str]], max_chars: int, where: str
) -> Capped:
    """The prompt `build(blocks, note)` makes, at most `max_chars` characters long, with the blocks it had to cut.

    `build` turns data blocks and a note for the judge (empty when nothing is cut) into the messages.
    """
    whole = list(blocks)
    data = sum(len(text) for _, text in blocks)
    if data <= max_chars:  # the usual case: built once, and sent whole when it fits
        messages = build(whole, "")
        if size(messages) <= max_chars:
            return Capped(messages, whole, [])
    # The instructions measured without the data: a 10 MB output is never hashed or searched whole.
    over = size(build([(label, "") for label, _ in blocks], "")) + data - max_chars
    # Room for the note as long as it can get (every block cut, with its largest numbers) and its blank line.
    longest_note = cut_note([Cut(label=label, total=len(text), shown=len(text)) for label, text in blocks])
    fitted, cuts = _fit(blocks, data - over - len(longest_note) - 2, where, max_chars)
    return Capped(build(fitted, cut_note(cuts)), fitted, cuts)


def _fit(blocks: Sequence[tuple[str, str]], budget: int, where: str, max_chars: int) -> tuple[Blocks, list[Cut]]:
    """Share `budget` characters among the blocks: short blocks whole, the longest cut to one equal share."""
    if budget < _LEAST_SHOWN * len(blocks):
        raise UsageError(
            f"{where}(max_chars={max_chars:,}) leaves no room for the data: the instructions alone take most of it. "
            f"Give max_chars a larger number (the default is {DEFAULT_MAX_CHARS:,})."
        )
    share = _share([len(text) for _, text in blocks], budget)
    fitted: Blocks = []
    cuts: list[Cut] = []
    for label, text in blocks:
        if len(text) <= share:
            fitted.append((label, text))
            continue
        kept = share - len(_MARKER.format(cut=len(text)))
        start, end = _word_start(text, (kept + 1) // 2), _word_end(text, len(text) - kept // 2)
        fitted.append((label, text[:start] + _MARKER.format(cut=end - start) + text[end:]))
        cuts.append(Cut(label=label, total=len(text), shown=start + len(text) - end))
    return fitted, cuts


def _splits_a_word(text: str, at: int) -> bool:
    return 0 < at < len(text) and not text[at - 1].isspace() and not text[at].isspace()


def _word_start(text: str, at: int) -> int:
    """`at`, or the start of the word it falls in (at most `_WORD_SEARCH` back): a cut there leaves no piece of a
    word, and so none of a credential, which no pattern would find in the record of what was sent."""
    if not _splits_a_word(text, at):
        return at
    window = text[max(0, at - _WORD_SEARCH) : at]
    found = _UP_TO_LAST_SPACE.match(window)
    return at - len(window) + (found.end() if found else 0)


def _word_end(text: str, at: int) -> int:
    """`at`, or the end of the word it falls in (at most `_WORD_SEARCH` on)."""
    if not _splits_a_word(text, at):
        return at
    found = _WORD.match(text, at, min(len(text), at + _WORD_SEARCH))
    return found.end() if found else at


def _share(lengths: list[int], budget: int) -> int:
    """The most characters any one block may keep so that all of them fit `budget` (water filling)."""
    remaining, left = budget, len(lengths)
    for length in sorted(lengths):
        if length * left > remaining:
            return remaining // left
        remaining -= length
        left -= 1
    return max(lengths, default=0)


def cut_note(cuts: Sequence[Cut]) -> str:
    """What the task tells the judge about the cut blocks (empty when none was cut)."""
    if not cuts:
        return ""
    shown = "; ".join(f"{cut.label}, {cut.shown:,} of {cut.total:,} characters shown" for cut in cuts)
    return (
        "Some data was too long to send whole. Each cut block keeps its start and its end, with a marker in the "
        f"middle saying how many characters are missing: {shown}. Judge what is shown; what was cut is unknown to "
        "you, not missing from the data."
    )


def cut_reason(cuts: Sequence[Cut], max_chars: int) -> str:
    """What the assertion's reason says about the cut blocks (empty when none was cut)."""
    if not cuts:
        return ""
    shown = "; ".join(f"{cut.shown:,} of {cut.total:,} characters of the {cut.label}" for cut in cuts)
    return f"cut to fit max_chars={max_chars:,}: the judge saw {shown}"
