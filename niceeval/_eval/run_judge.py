"""`t.judge`: the run's judge, opened on the eval's first use, and what it reads from the run.

The runner gives the context a `JudgeOpener` (its `JudgeSlot`); the context gives the judge a `JudgeView`, made of
the run's leaves (the event log, the case, the current exchange), never the context or its conversations, so a
finished run holds no reference cycle and is freed by reference counting. Both are made only when the eval judges.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel

from niceeval._core.errors import UsageError
from niceeval._core.events import Event, EventLog, MessageEvent
from niceeval._eval.checks import Starter

if TYPE_CHECKING:
    from niceeval._eval.cases import Case
    from niceeval.judge import Judge


@dataclass(kw_only=True, slots=True)
class JudgeView:
    """What the run's judge reads from the run, each read when a judge method is called.

    Built once per run and never changed; not frozen only because a frozen dataclass is slower to build.
    """

    start: Starter
    """Starts a judge call on the run's task group."""
    reply: Callable[[], str]
    """The current conversation's reply (`t.reply`): what a judge judges by default."""
    asked: Callable[[], str | None]
    """What the eval last sent with `t.send` in the current conversation; None before the first."""
    transcript: Callable[[], str]
    """The run's conversation so far as `User: ...` / `Assistant: ...` lines (`t.judge.conversation`)."""
    variables: Callable[[], Mapping[str, object]]
    """Values for rubric templates: the case's fields and `input`."""


class JudgeOpener(Protocol):
    """How a run's judge is made: once, on the eval's first `t.judge` (the runner's `JudgeSlot`)."""

    def open(self, view: JudgeView) -> Judge:
        """The run's judge, reading the run through `view`."""
        ...


class RunJudge:
    """The run's `t.judge`: opened through the runner's opener on first use, then the same judge.

    Args:
        opener: The runner's; None outside a run (`t.judge` then says where it works).
        start: Starts a judge call on the run's task group.
        reply: The current reply (`t.reply`).
        asked: What the eval last sent with `t.send` in the current conversation.
        log: The run's event log (the transcript).
        case: The run's case (the template variables).
    """

    __slots__ = ("_opener", "_start", "_reply", "_asked", "_log", "_case", "_judge")

    def __init__(
        self,
        opener: JudgeOpener | None,
        *,
        start: Starter,
        reply: Callable[[], str],
        asked: Callable[[], str | None],
        log: EventLog,
        case: Case | None,
    ) -> None:
        self._opener = opener
        self._start = start
        self._reply = reply
        self._asked = asked
        self._log = log
        self._case = case
        self._judge: Judge | None = None

    def get(self) -> Judge:
        """The judge, opened now if this is the run's first use."""
        if self._judge is None:
            if self._opener is None:
                raise UsageError("t.judge is available while an eval runs under `niceeval run`.")
            self._judge = self._opener.open(self._view())
        return self._judge

    def _view(self) -> JudgeView:
        log = self._log
        return JudgeView(
            start=self._start,
            reply=self._reply,
            asked=self._asked,
            transcript=lambda: transcript_of(log.events),
            variables=template_reader(self._case, self._asked),
        )


def transcript_of(events: Sequence[Event]) -> str:
    """The run's messages as `User: ...` / `Assistant: ...` lines, for the conversation graders."""
    lines = [
        f"{event.role.capitalize()}: {event.text}"
        for event in events
        if isinstance(event, MessageEvent) and event.role in ("user", "assistant")
    ]
    return "\n".join(lines)


def template_reader(case: Case | None, asked: Callable[[], str | None]) -> Callable[[], dict[str, object]]:
    """Reads what a rubric template can name: the case's fields, and `input`: the message last sent with `t.send`,
    or before any, the case's own `input` field (a labelled dataset judged with `on=`)."""
    data = case.data if case is not None else None

    def variables() -> dict[str, object]:
        fields = data.model_dump() if isinstance(data, BaseModel) else dict(data) if isinstance(data, Mapping) else {}
        sent = asked()
        return {**fields, "input": sent if sent is not None else fields.get("input", "")}

    return variables
