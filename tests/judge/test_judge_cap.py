"""What a judge is sent is capped (`max_chars`): a huge reply is cut in the middle, the judge is told, the reason
says so, and the request measured on the local server stays within the cap."""

from __future__ import annotations

import json

import anyio
import pytest
from judge_helpers import ANTHROPIC, OPENAI, RUBRIC_PASS, Run, always, answer

from niceeval import EvalContext, UsageError, define_config, define_eval
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.judge import Judge
from niceeval.judge._cache import JudgeCache
from niceeval.judge._cap import DEFAULT_MAX_CHARS
from niceeval.testing import LLMRequest, LLMServer, Reply

HUGE = "START " + "lorem ipsum " * 833_333 + " END"  # 10 MB
FACTUAL = {"reason": "same facts", "choice": "same"}


def prompt_chars(request: LLMRequest) -> int:
    return sum(len(message.content) for message in request.messages)


@pytest.mark.parametrize("model", [OPENAI, ANTHROPIC])
def test_a_ten_megabyte_reply_reaches_the_judge_as_a_request_within_the_cap(run: Run, model: str) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    run.reply = HUGE
    (result,) = run(lambda t: t.rubric("Is the reply polite?", model=model))
    (request,) = run.server.requests
    body = len(json.dumps(request.body, ensure_ascii=False))
    assert len(HUGE) > 10_000_000
    assert prompt_chars(request) <= DEFAULT_MAX_CHARS
    assert body < DEFAULT_MAX_CHARS + 3_000  # the answer schema and the JSON around the prompt
    user = request.last_user_text
    assert "START lorem" in user and "ipsum  END" in user  # the start and the end are kept
    assert "characters cut here ...]" in user
    assert "Each cut block keeps its start and its end, with a marker in the middle" in user
    assert f" of {len(HUGE):,} characters shown. Judge what is shown" in user
    assert result.state == "passed"
    assert f"(cut to fit max_chars={DEFAULT_MAX_CHARS:,}: the judge saw " in result.reason
    assert f"of {len(HUGE):,} characters of the output)" in result.reason
    assert result.judge_calls[0].messages[1]["content"] == user  # the record holds the prompt as sent


def test_a_reply_within_the_cap_is_sent_whole_and_nothing_is_said_about_cuts(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    (result,) = run(lambda t: t.rubric("Is the reply polite?"))
    user = run.server.requests[0].last_user_text
    assert "Your refund is on its way." in user and "cut" not in user
    assert result.reason == RUBRIC_PASS["reason"]


def test_a_calls_max_chars_caps_its_prompt(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    run.reply = HUGE
    (result,) = run(lambda t: t.rubric("Is the reply polite?", max_chars=20_000))
    assert prompt_chars(run.server.requests[0]) <= 20_000
    assert "cut to fit max_chars=20,000" in result.reason


def test_the_settings_max_chars_caps_every_call_and_a_calls_own_wins(run: Run) -> None:
    run.server.set_script(by_schema)
    run.settings = {"model": OPENAI, "max_chars": 30_000}
    run.reply = HUGE

    def both(t: Judge) -> None:
        t.rubric("Is the reply polite?")
        t.g_eval("Is it clear?", max_chars=12_000)

    rubric, g_eval = run(both)
    sizes = sorted(prompt_chars(request) for request in run.server.requests)
    assert 11_000 < sizes[0] <= 12_000 and 29_000 < sizes[1] <= 30_000
    assert "max_chars=30,000" in rubric.reason and "max_chars=12,000" in g_eval.reason


def by_schema(request: LLMRequest) -> Reply:
    """A rubric verdict, or a g_eval one when the answer schema asks for steps."""
    g_eval = "steps" in json.dumps(request.body)
    return answer(request, {"steps": ["Read it."], "assessment": "clear", "score": 5} if g_eval else RUBRIC_PASS)


def test_a_long_input_and_a_long_reference_share_the_cap_with_the_output(run: Run) -> None:
    run.server.set_script(always(FACTUAL))
    run.reply = "x" * 50_000
    run.asked = "q" * 200_000
    (result,) = run(lambda t: t.autoevals.factuality("r" * 300, max_chars=40_000))
    request = run.server.requests[0]
    assert prompt_chars(request) <= 40_000
    assert "r" * 300 in request.last_user_text  # the short reference is sent whole
    assert "input, " in request.last_user_text and "output, " in request.last_user_text  # both named in the note
    (call,) = result.judge_calls
    assert call.input is not None and len(call.input) < 20_000  # the input recorded as it was sent, cut
    assert "of 200,000 characters of the input" in result.reason


def test_a_vote_caps_every_voters_prompt(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    run.reply = HUGE
    (result,) = run(lambda t: t.vote(["Polite?", "Clear?"], max_chars=25_000))
    assert len(run.server.requests) == 2
    assert all(prompt_chars(request) <= 25_000 for request in run.server.requests)
    assert "cut to fit max_chars=25,000" in result.reason


def test_a_conversation_judge_cuts_a_long_transcript(run: Run) -> None:
    run.server.set_script(always({"reason": "done", "choice": "completed"}))
    transcript = "User: I want a refund\n" + "Assistant: checking\n" * 10_000
    (result,) = run(lambda t: t.conversation.goal_completion("a refund", on=transcript, max_chars=8_000))
    assert prompt_chars(run.server.requests[0]) <= 8_000
    assert "User: I want a refund" in run.server.requests[0].last_user_text
    assert f"of {len(transcript):,} characters of the output" in result.reason


def test_a_capped_prompt_is_the_same_each_time_so_the_cache_answers_it(run: Run, cache: JudgeCache) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    run.reply, run.cache = HUGE, cache
    (first,) = run(lambda t: t.rubric("Is the reply polite?"))
    (second,) = run(lambda t: t.rubric("Is the reply polite?"))
    assert len(run.server.requests) == 1
    assert second.judge_calls[0].cached and second.reason == first.reason


def test_a_cap_too_small_for_the_instructions_is_a_usage_error_saying_what_to_give(run: Run) -> None:
    with pytest.raises(UsageError, match=r"t\.judge\.rubric\(max_chars=500\) leaves no room for the data"):
        run(lambda t: t.rubric("Is the reply polite?", max_chars=500))


@pytest.mark.parametrize("value", [0, -5, True, 2.5, "big"])
def test_max_chars_is_a_positive_whole_number(run: Run, value: object) -> None:
    with pytest.raises(UsageError, match=r"rubric\(max_chars=\.\.\.\) is a number of characters, 1 or more"):
        run(lambda t: t.rubric("Is the reply polite?", max_chars=value))  # type: ignore[arg-type]


def test_the_config_sets_the_cap_and_an_evals_judge_setting_overrides_it(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    llm_server.set_script(always(RUBRIC_PASS))

    def huge(message: str) -> str:
        return HUGE

    @define_eval
    async def configured(t: EvalContext) -> None:
        await t.send("hello")
        t.judge.rubric("Is the reply polite?")

    @define_eval(judge={"max_chars": 9_000})
    async def own(t: EvalContext) -> None:
        await t.send("hello")
        t.judge.rubric("Is the reply polite?")

    config = define_config(judge={"model": "openai/judge", "max_chars": 50_000})
    options = ExecOptions(timeout=30, agent=huge, judge=config.judge)
    sizes = []
    for spec in (configured, own):
        result = anyio.run(execute, EvalEntry(id=f"evals/x.py::{spec.name}", spec=spec), 0, options)
        assert [a.state for a in result.assertions] == ["passed"], result.assertions
        sizes.append(prompt_chars(llm_server.requests[-1]))
    assert 49_000 < sizes[0] <= 50_000 and 8_000 < sizes[1] <= 9_000


def test_a_whole_prompt_template_is_capped_too(run: Run) -> None:
    run.server.set_script(always(RUBRIC_PASS))
    run.reply = HUGE
    template = "Is this reply polite?\n\n{output}\n\nThe rubric: {rubric}"
    (result,) = run(lambda t: t.rubric("Polite.", rubric_prompt=template, max_chars=15_000))
    user = run.server.requests[0].last_user_text
    assert prompt_chars(run.server.requests[0]) <= 15_000
    assert user.startswith("Is this reply polite?") and "The rubric: Polite." in user
    assert user.endswith(
        " characters shown. Judge what is shown; what was cut is unknown to you, not missing from the data."
    )
    assert "cut to fit max_chars=15,000" in result.reason


def test_similar_embeds_the_texts_within_the_cap(run: Run) -> None:
    (result,) = run(lambda t: t.similar("Refunds take five days.", on=HUGE, max_chars=10_000))
    (call,) = result.judge_calls
    assert sum(len(message["content"]) for message in call.messages) <= 10_000
    assert call.messages[0]["content"] == "Refunds take five days."  # the short text is sent whole
    assert "cut to fit max_chars=10,000" in result.reason


def test_a_cut_splits_no_word_so_the_record_holds_no_piece_of_a_secret() -> None:
    """The prompt as sent is stored with the run; a key the cut split would be a piece no pattern finds. The cut
    moves to the edge of the word it falls in, so a secret is sent whole (and scrubbed whole from the record) or not
    at all, wherever it stands."""
    from niceeval._core.redact import Redactor
    from niceeval.judge._cap import capped

    secret = "AKIAZQ8XW2LMN4PR7TYQ"
    pieces = {secret[i : i + 8] for i in range(len(secret) - 7)}
    filler = "lorem ipsum dolor " * 200
    for at in range(300, len(filler) - 300):
        text = filler[:at] + " aws " + secret + " " + filler[at:]
        sent = capped(lambda blocks, note: [{"role": "user", "content": blocks[0][1]}], [("output", text)], 1_500, "x")
        content = sent.messages[0]["content"]
        assert "characters cut here" in content and len(content) <= 1_500
        recorded = Redactor({}).text(content)
        assert [piece for piece in pieces if piece in recorded] == [], at
        cut = int(content.split("[... ")[1].split(" characters")[0].replace(",", ""))
        assert sent.cuts[0].shown + cut == len(text)  # the marker and the reason count what was left out
