"""`t.judge.autoevals`: graders in the spirit of autoevals. The model picks one labelled choice, and each choice has
a fixed score."""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

from niceeval.judge._families import CLOSED_QA, FACTUALITY, SUMMARY
from niceeval.judge._handle import JudgeHandle
from niceeval.judge._request import ASKED, REPLY, JudgeGroup, JudgeRequest, criteria_text, data_text, named


class Autoevals(JudgeGroup):
    """`t.judge.autoevals`: `factuality`, `closed_qa`, `summary`."""

    owner = "t.judge.autoevals"

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> NoReturn:
            if name == "summarizes":
                raise AttributeError(
                    "t.judge.autoevals has no 'summarizes': niceeval's faithfulness grader is "
                    "t.judge.summarizes(source), and autoevals' Summary (compared with a reference summary) is "
                    "t.judge.autoevals.summary(expected)."
                )
            super().__getattr__(name)

    def factuality(
        self,
        expected: object,
        *,
        on: object = REPLY,
        input: object = ASKED,
        model: str | None = None,
        samples: int | None = None,
        max_chars: int | None = None,
    ) -> JudgeHandle:
        """Is the output factually consistent with `expected` (a reference answer to the input)? As autoevals'
        Factuality: the question, the expert answer and the submission are shown.

        Scores: same facts or harmless differences 1.0, a consistent superset 0.6, a consistent subset 0.4,
        a contradiction 0.0.

        Args:
            expected: The reference answer; non-text values are sent as JSON.
            on: The value judged; the agent's reply by default.
            input: The question; the message last sent with `t.send` by default, `None` for none.
            model: The judge model for this call.
            samples: Ask the judge this many times (the score is the mean); `t.judge.rubric` says more.
            max_chars: The most characters this call's prompt may hold; `t.judge.rubric` says more.
        """
        where = "t.judge.autoevals.factuality"
        reference = data_text(expected, where, "the expected answer")
        return self._judge.ask(
            JudgeRequest(
                family=FACTUALITY,
                name="factuality",
                where=where,
                context=[("reference", reference)],
                on=on,
                input=input,
                model=model,
                samples=samples,
                max_chars=max_chars,
            )
        )

    def closed_qa(
        self,
        criteria: str,
        *,
        on: object = REPLY,
        input: object = ASKED,
        model: str | None = None,
        samples: int | None = None,
        max_chars: int | None = None,
    ) -> JudgeHandle:
        """Does the output meet `criteria`, as an answer to the input? Yes 1.0, no 0.0 (autoevals' ClosedQA: the
        task, the submission and the criterion are shown).

        Args:
            criteria: The question the judge answers yes or no, e.g. "Is the reply polite?".
            on: The value judged; the agent's reply by default.
            input: The task; the message last sent with `t.send` by default, `None` for none.
            model: The judge model for this call.
            samples: Ask the judge this many times (the score is the mean); `t.judge.rubric` says more.
            max_chars: The most characters this call's prompt may hold; `t.judge.rubric` says more.
        """
        where, name = "t.judge.autoevals.closed_qa", f"closed_qa({named(criteria)})"
        return self._judge.ask(
            JudgeRequest(
                family=CLOSED_QA,
                name=name,
                where=where,
                criteria=criteria_text(criteria, where),
                on=on,
                input=input,
                model=model,
                samples=samples,
                max_chars=max_chars,
            )
        )

    def summary(
        self,
        expected: object,
        *,
        on: object = REPLY,
        input: object = ASKED,
        model: str | None = None,
        samples: int | None = None,
        max_chars: int | None = None,
    ) -> JudgeHandle:
        """autoevals' Summary: is the output a better summary of the source text (`input`) than `expected`, a
        reference summary? The output better or as good 1.0, the reference better 0.0.

        Args:
            expected: The reference summary.
            on: The summary judged; the agent's reply by default.
            input: The source text; the message last sent with `t.send` by default (which holds the text when
                the eval asked the agent to summarise it).
            model: The judge model for this call.
            samples: Ask the judge this many times (the score is the mean); `t.judge.rubric` says more.
            max_chars: The most characters this call's prompt may hold; `t.judge.rubric` says more.
        """
        where = "t.judge.autoevals.summary"
        reference = data_text(expected, where, "the reference summary")
        return self._judge.ask(
            JudgeRequest(
                family=SUMMARY,
                name="summary",
                where=where,
                context=[("reference", reference)],
                on=on,
                input=input,
                input_label="source",
                input_required="the source text: pass input=TEXT, or `await t.send(...)` the text to summarise first",
                model=model,
                samples=samples,
                max_chars=max_chars,
            )
        )
