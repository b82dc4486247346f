"""`t.judge.rag`: the retrieval-augmented generation graders (RAGAS' and promptfoo's four), as labelled choices.

Each shows the judge the question (`input`), the retrieved context and, depending on the grader, the answer or
the reference; the choice's fixed score is the verdict, like the autoevals graders.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from niceeval._core.errors import UsageError
from niceeval.judge._families import ANSWER_RELEVANCE, CONTEXT_RECALL, CONTEXT_RELEVANCE, FAITHFULNESS, Family
from niceeval.judge._handle import JudgeHandle
from niceeval.judge._prompts import as_text


class _Asker(Protocol):
    """What `Rag` needs of `t.judge` (a protocol, so that this module does not import `_judge`, which imports it)."""

    def _ask_with(
        self,
        family: Family,
        data: Sequence[tuple[str, str]],
        on: object,
        input: object,
        model: str | None,
        *,
        name: str,
        where: str,
        samples: int | None = None,
    ) -> JudgeHandle: ...


DEFAULT: Any = object()
"""`on=`: the agent's reply; `input=`: the message last sent with `t.send` (`None`: show no input)."""


def _text(value: object, where: str, what: str) -> str:
    text = as_text(value)
    if not text.strip():
        raise UsageError(f"{where}() needs {what}, got {value!r}.")
    return text


class Rag:
    """`t.judge.rag`: faithfulness, answer relevance, context relevance, context recall."""

    def __init__(self, judge: _Asker) -> None:
        self._judge = judge

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> NoReturn:
            raise AttributeError(
                f"t.judge.rag has no judge {name!r}; the judges are: faithfulness, answer_relevance, "
                "context_relevance, context_recall."
            )

    def faithfulness(
        self,
        context: object,
        *,
        on: object = DEFAULT,
        input: object = DEFAULT,
        model: str | None = None,
        samples: int | None = None,
    ) -> JudgeHandle:
        """Is every claim of the output supported by `context` (the retrieved documents)? Fully 1.0, mostly 0.5,
        unsupported 0.0 (RAGAS' faithfulness, promptfoo's context-faithfulness).

        Args:
            context: The retrieved documents (text, or a list of them).
            on: The value judged; the agent's reply by default.
            input: The question; the message last sent with `t.send` by default, `None` for none.
            model: The judge model for this call.
            samples: Ask the judge this many times (the score is the mean); `t.judge.rubric` says more.
        """
        where = "t.judge.rag.faithfulness"
        data = [("context", _text(context, where, "the retrieved context"))]
        name = "faithfulness"
        return self._judge._ask_with(FAITHFULNESS, data, on, input, model, name=name, where=where, samples=samples)

    def answer_relevance(
        self, *, on: object = DEFAULT, input: object = DEFAULT, model: str | None = None, samples: int | None = None
    ) -> JudgeHandle:
        """Does the output answer the question (the input)? Relevant 1.0, partly 0.5, irrelevant 0.0."""
        where = "t.judge.rag.answer_relevance"
        name = "answer_relevance"
        return self._judge._ask_with(ANSWER_RELEVANCE, [], on, input, model, name=name, where=where, samples=samples)

    def context_relevance(
        self, context: object, *, input: object = DEFAULT, model: str | None = None, samples: int | None = None
    ) -> JudgeHandle:
        """Does `context` hold what answering the question (the input) needs? Relevant 1.0, partly 0.5,
        irrelevant 0.0. The context is what is judged, not the reply."""
        where = "t.judge.rag.context_relevance"
        text = _text(context, where, "the retrieved context")
        name = "context_relevance"
        return self._judge._ask_with(CONTEXT_RELEVANCE, [], text, input, model, name=name, where=where, samples=samples)

    def context_recall(
        self,
        context: object,
        expected: object,
        *,
        input: object = DEFAULT,
        model: str | None = None,
        samples: int | None = None,
    ) -> JudgeHandle:
        """Does `context` contain the facts of `expected` (a reference answer)? All 1.0, some 0.5, none 0.0."""
        where = "t.judge.rag.context_recall"
        text = _text(context, where, "the retrieved context")
        data = [("reference", _text(expected, where, "the expected answer"))]
        name = "context_recall"
        return self._judge._ask_with(CONTEXT_RECALL, data, text, input, model, name=name, where=where, samples=samples)
