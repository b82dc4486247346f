"""`JudgeRequest`: one question for the judge, as a record. Every judge method builds one and asks it with
`Judge.ask(request)`, the one way to ask: `t.judge.rubric`, `t.judge.autoevals.*`, `t.judge.rag.*` and
`t.judge.conversation.*` differ only in the request they build.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, NoReturn, Protocol

from niceeval._core.errors import UsageError
from niceeval._core.values import short
from niceeval.judge._families import Family
from niceeval.judge._prompts import as_text

if TYPE_CHECKING:
    from niceeval.judge._handle import JudgeHandle

FAMILIES = (
    "rubric",
    "g_eval",
    "vote",
    "summarizes",
    "similar",
    "autoevals.factuality",
    "autoevals.closed_qa",
    "autoevals.summary",
    "conversation.goal_completion",
    "conversation.role_adherence",
    "conversation.knowledge_retention",
    "rag.faithfulness",
    "rag.answer_relevance",
    "rag.context_relevance",
    "rag.context_recall",
    "openai.score_model",
    "openai.label_model",
)


class _Reply:
    """The default of `on=`: the agent's reply as it is when the judge method is called."""

    def __repr__(self) -> str:
        return "t.reply"


class _Asked:
    """The default of `input=`: the message last sent with `t.send` in the current conversation."""

    def __repr__(self) -> str:
        return "the message last sent with t.send"


class _Transcript:
    """`on=` of the conversation judges: the run's messages so far, as `User: ...` / `Assistant: ...` lines."""

    def __repr__(self) -> str:
        return "the run's transcript"


REPLY = _Reply()
ASKED = _Asked()
TRANSCRIPT = _Transcript()


@dataclass(frozen=True, slots=True)
class Prompt:
    """A `rubric_prompt=` template with the values it is filled from."""

    template: str
    variables: Mapping[str, object]
    where: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class JudgeRequest:
    """One judge question: what is asked, about which value, shown with what, of which model.

    The values `on` and `input` name are read when the request is asked (`Judge.ask`), so a request built right
    after a `t.send` judges that reply.
    """

    family: Family
    """What is asked, and how the answer is scored."""
    name: str
    """The assertion's name in reports, e.g. `rubric(Is the reply polite?)`."""
    where: str
    """The method the eval called, for errors: `t.judge.rubric`."""
    criteria: str | None = None
    """The author's criteria, for the families that take some."""
    context: Sequence[tuple[str, str]] = ()
    """Labelled data shown between the input and the output (`("reference", text)`), untrusted like the output."""
    on: object = REPLY
    """The value judged: `REPLY` (the agent's reply), `TRANSCRIPT` (the run's conversation), or a value (non-text
    values are sent as JSON)."""
    input: object = ASKED
    """What the user asked, shown as context: `ASKED` (the message last sent), `None` (none), or a value."""
    input_label: str = "input"
    """The label the input is shown under: `source` when the input is the text the output summarises."""
    input_required: str | None = None
    """When set, a request without an input is a usage error that says this (what the call needs)."""
    model: str | None = None
    """The judge model of this call (`provider/model`); the settings' model when None."""
    samples: int | None = None
    """How many times the judge is asked on the same prompt; the settings' `samples` when None."""
    max_chars: int | None = None
    """The most characters the prompt may hold (longer data is cut, and the cut said); the settings' `max_chars`
    when None."""
    prompt: Prompt | None = None
    """A whole-prompt template (`rubric_prompt=`) instead of the family's prompt."""


class Asks(Protocol):
    """What the judge families (`autoevals`, `rag`, `conversation`) need of `t.judge`: the one way to ask."""

    def ask(self, request: JudgeRequest) -> JudgeHandle:
        """Ask `request`'s question; the handle comes back at once."""
        ...


class JudgeGroup:
    """A group of judges under `t.judge` (`autoevals`, `rag`, `conversation`, `openai`): each of its methods builds a
    `JudgeRequest` and asks it of `t.judge`; a misspelt judge is an error that lists the group's judges."""

    owner: ClassVar[str]
    """How the eval names the group: `t.judge.rag`."""
    judges: ClassVar[Sequence[str]] = FAMILIES
    """The judges a misspelt name's error lists: every family unless the group names its own."""

    def __init__(self, judge: Asks) -> None:
        self._judge = judge

    if not TYPE_CHECKING:  # type checkers should still flag a misspelt judge

        def __getattr__(self, name: str) -> NoReturn:
            no_such_judge(self.owner, name, self.judges)


def one_line(prose: object) -> object:
    """A rubric's words on one line: its line breaks and indents are one space each (they carry no meaning)."""
    return " ".join(prose.split()) if isinstance(prose, str) else prose  # not text: refused, naming it as it is


def named(prose: object) -> str:
    """How criteria appear in an assertion's name: on one line, bounded (`rubric('Polite. Names the order.')`).

    A multi-line rubric named by its repr showed a literal `\\n` in every report, chart label and heat map.
    """
    return short(one_line(prose))


def criteria_text(value: object, where: str) -> str:
    """The author's criteria, refused when they are not text or empty."""
    if not isinstance(value, str) or not value.strip():
        raise UsageError(
            f"{where}() needs non-empty criteria text, got {value!r}, e.g. {where}('Is the reply polite?')."
        )
    return value


def said(transcript: str, where: str) -> str:
    """A conversation's transcript to judge, refused when nothing was said in it yet."""
    if not transcript.strip():
        raise UsageError(f"{where}() judges the conversation, and nothing was said yet: `await t.send(...)` first.")
    return transcript


def data_text(value: object, where: str, what: str) -> str:
    """A reference, source or context as the judge sees it, refused when it is empty."""
    text = as_text(value)
    if not text.strip():
        raise UsageError(f"{where}() needs {what}, got {value!r}.")
    return text


def no_such_judge(owner: str, name: str, judges: Sequence[str] = FAMILIES) -> NoReturn:
    """`t.judge.<misspelt>`: the error lists the judges there are."""
    raise AttributeError(f"{owner} has no judge {name!r}; the judges are: {', '.join(judges)}.")
