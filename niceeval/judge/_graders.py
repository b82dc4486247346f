"""`t.judge.openai`: OpenAI Evals' model graders, `score_model` and `label_model`, with their pass rules.

The grader's own messages are the grading task (its `{{sample.*}}` placeholders point at the output); the output
is shown as tagged, untrusted data like every judge's, and the answer is forced into a schema: a number in the
grader's range, or one of its labels.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from niceeval._core.errors import UsageError
from niceeval.judge._families import REASON_FIELD, AnswerError, Family, Parsed, object_schema, validated
from niceeval.judge._handle import JudgeHandle
from niceeval.judge._request import REPLY, JudgeGroup, JudgeRequest, criteria_text, named


class _ScoreAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    reason: str
    result: float


class _LabelAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    reason: str
    label: str


def score_family(low: float, high: float) -> Family:
    """A number from `low` to `high`, scored onto [0, 1]."""

    def parse(data: object) -> Parsed:
        answer = validated(_ScoreAnswer, data)
        if not low <= answer.result <= high:
            raise AnswerError(f"result must be from {low:g} to {high:g}; got {answer.result:g}")
        score = (answer.result - low) / (high - low)
        reason = f"{answer.reason} (result {answer.result:g} of {low:g}-{high:g})"
        return Parsed(score, None, reason, answer.model_dump())

    result = {"type": "number", "description": f"The score, from {low:g} to {high:g}."}
    return Family(
        name="score_model",
        task=f"{{criteria}}\n\nAnswer with reason and result, a number from {low:g} to {high:g}.",
        schema=object_schema({"reason": REASON_FIELD, "result": result}),
        parse=parse,
    )


def label_family(labels: Sequence[str], passing: Sequence[str]) -> Family:
    """One of `labels`: 1.0 for a passing label, 0.0 for another."""

    def parse(data: object) -> Parsed:
        answer = validated(_LabelAnswer, data)
        label = answer.label.strip()
        if label not in labels:
            raise AnswerError(f"label must be one of {', '.join(labels)}; got {answer.label!r}")
        reason = f"{answer.reason} (label {label!r})"
        return Parsed(1.0 if label in passing else 0.0, None, reason, {"reason": answer.reason, "label": label})

    return Family(
        name="label_model",
        task="{criteria}\n\nAnswer with reason and label, exactly one of: " + ", ".join(labels) + ".",
        schema=object_schema({"reason": REASON_FIELD, "label": {"type": "string", "enum": list(labels)}}),
        parse=parse,
    )


class OpenAIGraders(JudgeGroup):
    """`t.judge.openai`: `score_model`, `label_model` (OpenAI Evals' model graders)."""

    owner = "t.judge.openai"

    def score_model(
        self,
        task: str,
        *,
        range: tuple[float, float] = (0.0, 1.0),
        pass_threshold: float | None = None,
        on: object = REPLY,
        model: str | None = None,
        max_chars: int | None = None,
    ) -> JudgeHandle:
        """OpenAI's `score_model`: the judge answers a number in `range`; it passes at `pass_threshold` (without
        one, the score is recorded and always passes). The score is the number mapped onto [0, 1].

        Args:
            task: The grader's messages, as the grading task.
            range: The lowest and highest result.
            pass_threshold: The least passing result, in the range's units.
            on: The value judged; the agent's reply by default.
            model: The judge model for this call.
            max_chars: The most characters this call's prompt may hold; `t.judge.rubric` says more.
        """
        where = "t.judge.openai.score_model"
        low, high = (float(x) for x in range)
        if not low < high:
            raise UsageError(f"{where}(range=...) must be (low, high) with low < high, got {range!r}.")
        if pass_threshold is not None and not low <= pass_threshold <= high:
            raise UsageError(f"{where}(pass_threshold=...) must lie in the range {low:g}-{high:g}.")
        request = JudgeRequest(
            family=score_family(low, high),
            name=f"score_model({named(task)})",
            where=where,
            criteria=criteria_text(task, where),
            on=on,
            input=None,
            model=model,
            max_chars=max_chars,
        )
        cut = 0.0 if pass_threshold is None else (pass_threshold - low) / (high - low)
        return self._judge.ask(request).at_least(cut)

    def label_model(
        self,
        task: str,
        *,
        labels: Sequence[str],
        passing_labels: Sequence[str],
        on: object = REPLY,
        model: str | None = None,
        max_chars: int | None = None,
    ) -> JudgeHandle:
        """OpenAI's `label_model`: the judge picks one of `labels`; it passes when that is one of `passing_labels`.

        Args:
            task: The grader's messages, as the grading task.
            labels: The labels to choose from.
            passing_labels: The labels that pass (a subset of `labels`).
            on: The value judged; the agent's reply by default.
            model: The judge model for this call.
            max_chars: The most characters this call's prompt may hold; `t.judge.rubric` says more.
        """
        where = "t.judge.openai.label_model"
        if isinstance(labels, str) or not labels or not all(isinstance(label, str) for label in labels):
            raise UsageError(f"{where}(labels=...) takes a non-empty list of labels, got {labels!r}.")
        if isinstance(passing_labels, str) or not set(passing_labels) <= set(labels):
            raise UsageError(f"{where}(passing_labels=...) must be a list of some of {list(labels)}.")
        request = JudgeRequest(
            family=label_family(list(labels), list(passing_labels)),
            name=f"label_model({named(task)})",
            where=where,
            criteria=criteria_text(task, where),
            on=on,
            input=None,
            model=model,
            max_chars=max_chars,
        )
        return self._judge.ask(request).at_least(1.0)
