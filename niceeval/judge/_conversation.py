"""`t.judge.conversation`: graders over a whole conversation's transcript (DeepEval's conversational metrics).

The judged value is the transcript of the run's messages (`User: ...` / `Assistant: ...`), read when the method
is called, or `on=` a transcript of your own. No input is shown: the transcript holds it.
"""

from __future__ import annotations

from niceeval._core.errors import UsageError
from niceeval.judge._families import GOAL_COMPLETION, KNOWLEDGE_RETENTION, ROLE_ADHERENCE
from niceeval.judge._handle import JudgeHandle
from niceeval.judge._prompts import as_text
from niceeval.judge._request import TRANSCRIPT, JudgeGroup, JudgeRequest, said


class ConversationJudges(JudgeGroup):
    """`t.judge.conversation`: `goal_completion(goal)`, `role_adherence(role)`, `knowledge_retention()`."""

    owner = "t.judge.conversation"
    judges = ("goal_completion", "role_adherence", "knowledge_retention")

    def goal_completion(
        self,
        goal: str,
        *,
        on: object = TRANSCRIPT,
        model: str | None = None,
        samples: int | None = None,
        max_chars: int | None = None,
    ) -> JudgeHandle:
        """Did the conversation reach `goal` (what the user came to do)? Completed 1.0, partly 0.5, not 0.0.

        `max_chars` caps the prompt (a long transcript is cut in the middle, keeping its start and its end).
        """
        where = "t.judge.conversation.goal_completion"
        return self._judge.ask(
            JudgeRequest(
                family=GOAL_COMPLETION,
                name="goal_completion",
                where=where,
                criteria=_criteria(goal, where),
                on=_transcript(on, where),
                input=None,
                model=model,
                samples=samples,
                max_chars=max_chars,
            )
        )

    def role_adherence(
        self,
        role: str,
        *,
        on: object = TRANSCRIPT,
        model: str | None = None,
        samples: int | None = None,
        max_chars: int | None = None,
    ) -> JudgeHandle:
        """Did the assistant keep to `role` in every turn? In role 1.0, slipped 0.5, out of role 0.0."""
        where = "t.judge.conversation.role_adherence"
        return self._judge.ask(
            JudgeRequest(
                family=ROLE_ADHERENCE,
                name="role_adherence",
                where=where,
                criteria=_criteria(role, where),
                on=_transcript(on, where),
                input=None,
                model=model,
                samples=samples,
                max_chars=max_chars,
            )
        )

    def knowledge_retention(
        self,
        *,
        on: object = TRANSCRIPT,
        model: str | None = None,
        samples: int | None = None,
        max_chars: int | None = None,
    ) -> JudgeHandle:
        """Does the assistant remember what the user told it earlier? Retained 1.0, forgot some 0.5, forgot 0.0."""
        where = "t.judge.conversation.knowledge_retention"
        return self._judge.ask(
            JudgeRequest(
                family=KNOWLEDGE_RETENTION,
                name="knowledge_retention",
                where=where,
                on=_transcript(on, where),
                input=None,
                model=model,
                samples=samples,
                max_chars=max_chars,
            )
        )


def _transcript(on: object, where: str) -> object:
    """`on=`: the run's transcript (read when the request is asked), or a transcript of the author's own."""
    if on is TRANSCRIPT:
        return on
    return said(as_text(on), where)


def _criteria(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{where}() needs a description in words, got {value!r}.")
    return value
