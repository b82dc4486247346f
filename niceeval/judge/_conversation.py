"""`t.judge.conversation`: graders over a whole conversation's transcript (DeepEval's conversational metrics).

The judged value is the transcript of the run's messages (`User: ...` / `Assistant: ...`), read when the method
is called, or `on=` a transcript of your own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from niceeval._core.errors import UsageError
from niceeval.judge._families import GOAL_COMPLETION, KNOWLEDGE_RETENTION, ROLE_ADHERENCE, Family
from niceeval.judge._handle import JudgeHandle
from niceeval.judge._prompts import as_text

_MINE: Any = object()


class _Judge(Protocol):
    """What the conversation graders need of `t.judge` (a protocol: `_judge` imports this module)."""

    def _ask_criteria(
        self,
        family: Family,
        criteria: str | None,
        on: str,
        model: str | None,
        *,
        name: str,
        where: str,
        samples: int | None = None,
    ) -> JudgeHandle: ...

    def _transcript(self) -> str: ...


class ConversationJudges:
    """`t.judge.conversation`: `goal_completion(goal)`, `role_adherence(role)`, `knowledge_retention()`."""

    def __init__(self, judge: _Judge) -> None:
        self._judge = judge

    if not TYPE_CHECKING:  # type checkers should still flag a misspelt judge

        def __getattr__(self, name: str) -> NoReturn:
            raise AttributeError(
                f"t.judge.conversation has no judge {name!r}; the judges are: goal_completion, role_adherence, "
                "knowledge_retention."
            )

    def _on(self, on: object, where: str) -> str:
        text = self._judge._transcript() if on is _MINE else as_text(on)
        if not text.strip():
            raise UsageError(f"{where}() judges the conversation, and nothing was said yet: `await t.send(...)` first.")
        return text

    def goal_completion(
        self, goal: str, *, on: object = _MINE, model: str | None = None, samples: int | None = None
    ) -> JudgeHandle:
        """Did the conversation reach `goal` (what the user came to do)? Completed 1.0, partly 0.5, not 0.0."""
        where = "t.judge.conversation.goal_completion"
        criteria, text = _criteria(goal, where), self._on(on, where)
        return self._judge._ask_criteria(
            GOAL_COMPLETION, criteria, text, model, name="goal_completion", where=where, samples=samples
        )

    def role_adherence(
        self, role: str, *, on: object = _MINE, model: str | None = None, samples: int | None = None
    ) -> JudgeHandle:
        """Did the assistant keep to `role` in every turn? In role 1.0, slipped 0.5, out of role 0.0."""
        where = "t.judge.conversation.role_adherence"
        criteria, text = _criteria(role, where), self._on(on, where)
        return self._judge._ask_criteria(
            ROLE_ADHERENCE, criteria, text, model, name="role_adherence", where=where, samples=samples
        )

    def knowledge_retention(
        self, *, on: object = _MINE, model: str | None = None, samples: int | None = None
    ) -> JudgeHandle:
        """Does the assistant remember what the user told it earlier? Retained 1.0, forgot some 0.5, forgot 0.0."""
        where = "t.judge.conversation.knowledge_retention"
        text = self._on(on, where)
        return self._judge._ask_criteria(
            KNOWLEDGE_RETENTION, None, text, model, name="knowledge_retention", where=where, samples=samples
        )


def _criteria(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{where}() needs a description in words, got {value!r}.")
    return value
