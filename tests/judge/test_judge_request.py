"""`Judge.ask(JudgeRequest)`: the one way to ask a judge. Every judge method, and the `autoevals`, `rag` and
`conversation` families, build a request and ask it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from judge_helpers import RUBRIC_PASS, Run, always

import niceeval.judge
from niceeval import UsageError
from niceeval.judge._families import RUBRIC, SUMMARY
from niceeval.judge._request import TRANSCRIPT, JudgeRequest


def test_a_request_asked_directly_is_judged_like_a_method_call(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    request = JudgeRequest(family=RUBRIC, name="tone", where="t.judge.tone", criteria="Is the reply polite?")
    (result,) = run(lambda t: t.ask(request))
    user = run.server.requests[0].last_user_text
    assert "Is the reply polite?" in user and "Where is my refund?" in user and "Your refund is on its way." in user
    assert (result.name, result.state, result.score, result.expected) == ("tone", "passed", 0.9, "Is the reply polite?")
    assert result.judge_calls[0].input == "Where is my refund?"


def test_a_request_whose_input_is_required_names_what_is_missing(run: Run) -> None:
    run.asked = None
    request = JudgeRequest(
        family=SUMMARY, name="summary", where="t.judge.mine", on="A summary.", input_required="the text summarised"
    )
    with pytest.raises(UsageError, match=r"^t\.judge\.mine\(\) needs the text summarised\.$"):
        run(lambda t: t.ask(request))


def test_a_request_on_the_transcript_before_anything_was_said_is_an_author_error(run: Run) -> None:
    request = JudgeRequest(family=RUBRIC, name="c", where="t.judge.conversation.x", criteria="c", on=TRANSCRIPT)
    with pytest.raises(UsageError, match=r"judges the conversation, and nothing was said yet"):
        run(lambda t: t.ask(request))


def test_the_judge_families_ask_only_through_the_public_door() -> None:
    """`autoevals`, `rag` and `conversation` build requests: none reaches into the judge's private methods."""
    folder = Path(niceeval.judge.__file__).parent
    reaching = {
        path.name: re.findall(r"self\._judge\.(_\w+)", path.read_text(encoding="utf-8")) for path in folder.glob("*.py")
    }
    assert {name: found for name, found in reaching.items() if found} == {}
