"""A lone surrogate in what is judged (issue 17): the judge is asked about the text with U+FFFD in its place,
as every report shows it, instead of failing with a UnicodeEncodeError before any request."""

from __future__ import annotations

from judge_helpers import RUBRIC_PASS, Run, always

from niceeval.judge._cache import JudgeCache


def test_a_reply_with_a_lone_surrogate_is_judged_with_the_replacement_character(run: Run, cache: JudgeCache) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    run.reply, run.asked, run.cache = "bad \ud83d reply", "say \udc00 hi", cache
    (result,) = run(lambda t: t.rubric("Is it helpful?"))
    assert (result.state, result.score) == ("passed", 0.9), result.reason
    assert len(run.server.requests) == 1
    user = run.server.requests[0].last_user_text
    assert "bad \ufffd reply" in user and "say \ufffd hi" in user
    assert result.judge_calls[0].input == "say \ufffd hi"
    (again,) = run(lambda t: t.rubric("Is it helpful?"))  # and the verdict was cached under that text
    assert again.state == "passed" and len(run.server.requests) == 1
