"""`t.judge.rag`: the retrieval-augmented generation graders (RAGAS' and promptfoo's four), as labelled choices.

Each shows the judge the question (`input`), the retrieved context and, depending on the grader, the answer or
the reference; the choice's fixed score is the verdict, like the autoevals graders.
"""

from __future__ import annotations

from niceeval.judge._families import ANSWER_RELEVANCE, CONTEXT_RECALL, CONTEXT_RELEVANCE, FAITHFULNESS
from niceeval.judge._handle import JudgeHandle
from niceeval.judge._request import ASKED, REPLY, JudgeGroup, JudgeRequest, data_text


class Rag(JudgeGroup):
    """`t.judge.rag`: faithfulness, answer relevance, context relevance, context recall."""

    owner = "t.judge.rag"
    judges = ("faithfulness", "answer_relevance", "context_relevance", "context_recall")

    def faithfulness(
        self,
        context: object,
        *,
        on: object = REPLY,
        input: object = ASKED,
        model: str | None = None,
        samples: int | None = None,
        max_chars: int | None = None,
    ) -> JudgeHandle:
        """Is every claim of the output supported by `context` (the retrieved documents)? Fully 1.0, mostly 0.5,
        unsupported 0.0 (RAGAS' faithfulness, promptfoo's context-faithfulness).

        Args:
            context: The retrieved documents (text, or a list of them).
            on: The value judged; the agent's reply by default.
            input: The question; the message last sent with `t.send` by default, `None` for none.
            model: The judge model for this call.
            samples: Ask the judge this many times (the score is the mean); `t.judge.rubric` says more.
            max_chars: The most characters this call's prompt may hold; `t.judge.rubric` says more.
        """
        where = "t.judge.rag.faithfulness"
        documents = data_text(context, where, "the retrieved context")
        return self._judge.ask(
            JudgeRequest(
                family=FAITHFULNESS,
                name="faithfulness",
                where=where,
                context=[("context", documents)],
                on=on,
                input=input,
                model=model,
                samples=samples,
                max_chars=max_chars,
            )
        )

    def answer_relevance(
        self,
        *,
        on: object = REPLY,
        input: object = ASKED,
        model: str | None = None,
        samples: int | None = None,
        max_chars: int | None = None,
    ) -> JudgeHandle:
        """Does the output answer the question (the input)? Relevant 1.0, partly 0.5, irrelevant 0.0."""
        where = "t.judge.rag.answer_relevance"
        return self._judge.ask(
            JudgeRequest(
                family=ANSWER_RELEVANCE,
                name="answer_relevance",
                where=where,
                on=on,
                input=input,
                model=model,
                samples=samples,
                max_chars=max_chars,
            )
        )

    def context_relevance(
        self,
        context: object,
        *,
        input: object = ASKED,
        model: str | None = None,
        samples: int | None = None,
        max_chars: int | None = None,
    ) -> JudgeHandle:
        """Does `context` hold what answering the question (the input) needs? Relevant 1.0, partly 0.5,
        irrelevant 0.0. The context is what is judged, not the reply."""
        where = "t.judge.rag.context_relevance"
        documents = data_text(context, where, "the retrieved context")
        return self._judge.ask(
            JudgeRequest(
                family=CONTEXT_RELEVANCE,
                name="context_relevance",
                where=where,
                on=documents,
                input=input,
                model=model,
                samples=samples,
                max_chars=max_chars,
            )
        )

    def context_recall(
        self,
        context: object,
        expected: object,
        *,
        input: object = ASKED,
        model: str | None = None,
        samples: int | None = None,
        max_chars: int | None = None,
    ) -> JudgeHandle:
        """Does `context` contain the facts of `expected` (a reference answer)? All 1.0, some 0.5, none 0.0."""
        where = "t.judge.rag.context_recall"
        documents = data_text(context, where, "the retrieved context")
        reference = data_text(expected, where, "the expected answer")
        return self._judge.ask(
            JudgeRequest(
                family=CONTEXT_RECALL,
                name="context_recall",
                where=where,
                context=[("reference", reference)],
                on=documents,
                input=input,
                model=model,
                samples=samples,
                max_chars=max_chars,
            )
        )
