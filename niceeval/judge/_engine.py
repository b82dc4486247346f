"""Asking one model for a verdict: the cache, the request, one repair turn, and the record of what happened.

`consult` asks one model and never raises for anything a provider or a model can do: every way of not getting
a verdict becomes a failed `Consultation` with a cause (`no_api_key`, `timeout`, `rate_limited`,
`provider_error`, `parse_error`). `decide` asks the primary model, then the fallback when the primary gave no
verdict. `poll` asks several at once (a vote's voters).
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from niceeval._core.assertion import Cause, JudgeCall
from niceeval._core.text import without_surrogates
from niceeval.judge._cache import CachedVerdict, CacheMode, JudgeCache, cache_key
from niceeval.judge._cap import CHARS_PER_TOKEN, DEFAULT_MAX_CHARS
from niceeval.judge._client import (
    ANTHROPIC_MAX_TOKENS,
    CallRefused,
    JudgeClients,
    ModelAnswer,
    Request,
    ask,
    embed_similarity,
)
from niceeval.judge._families import AnswerError, Family, Parsed
from niceeval.judge._prompts import Messages, repair_messages
from niceeval.providers import ModelRef, ProviderError, RetryPolicy, cost_of, find_price, prices_ready

if TYPE_CHECKING:
    from niceeval._core.settings import Price


ANSWER_TOKENS = 300
"""Output tokens one judge answer is taken to cost in an estimate: a reason and the structured fields (a g_eval's
steps run longer, most answers shorter)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Env:
    """What every judge request of one run shares."""

    clients: JudgeClients
    cache: JudgeCache | None
    cache_mode: CacheMode
    pricing: Mapping[str, Price]
    timeout: float
    retry: RetryPolicy
    max_chars: int = DEFAULT_MAX_CHARS
    """The cap of each prompt in characters (the settings' `max_chars`); a call's own wins."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Consultation:
    """One model asked: the record kept with the result, and the scored answer when there is one."""

    call: JudgeCall
    parsed: Parsed | None = None

    @property
    def failed(self) -> bool:
        """True when this model gave no verdict (`call.cause` says why)."""
        return self.parsed is None


@dataclass(kw_only=True, slots=True)
class _Attempt:
    """What one consultation has sent and spent so far, kept when a later step fails."""

    messages: Messages
    judged_input: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    started: float = field(default_factory=time.monotonic)

    def spent(self, answer: ModelAnswer) -> None:
        self.input_tokens += answer.input_tokens
        self.output_tokens += answer.output_tokens
        self.cache_read_tokens += answer.cache_read_tokens


class _Unparseable(Exception):
    pass


def _params(ref: ModelRef) -> dict[str, Any]:
    """The request parameters besides the prompt and schema, part of the cache key."""
    if ref.provider == "anthropic":
        return {"structured": "forced_tool", "max_tokens": ANTHROPIC_MAX_TOKENS}
    return {"structured": "json_schema_strict"}


def _cost(env: Env, model: str, attempt: _Attempt) -> float | None:
    price = find_price(model, env.pricing)
    if price is None:
        return None
    return cost_of(
        price,
        input_tokens=attempt.input_tokens,
        output_tokens=attempt.output_tokens,
        cache_read_tokens=attempt.cache_read_tokens,
    )


def estimated_cost(model: str, calls: int, *, max_chars: int, pricing: Mapping[str, Price]) -> float | None:
    """At most what `calls` judge calls to `model` cost when every prompt is as long as the cap allows (`max_chars`
    characters, about `CHARS_PER_TOKEN` each), each answered in `ANSWER_TOKENS`; None when the model has no price.

    A repair turn or a fallback model adds to it; a verdict read from the judge cache costs nothing.
    """
    price = find_price(model, pricing)
    if price is None:
        return None
    tokens = math.ceil(max_chars / CHARS_PER_TOKEN)
    return cost_of(price, input_tokens=calls * tokens, output_tokens=calls * ANSWER_TOKENS)


def _record(env: Env, model: str, attempt: _Attempt, *, fallback: bool, **fields: Any) -> JudgeCall:
    return JudgeCall(
        model=model,
        messages=attempt.messages,
        input=attempt.judged_input,
        input_tokens=attempt.input_tokens,
        output_tokens=attempt.output_tokens,
        cache_read_tokens=attempt.cache_read_tokens,
        cost=_cost(env, model, attempt),
        latency=time.monotonic() - attempt.started,
        fallback=fallback,
        **fields,
    )


async def _from_cache(
    env: Env, key: str, model: str, messages: Messages, family: Family, fallback: bool, judged_input: str | None
) -> Consultation | None:
    assert env.cache is not None
    started = time.monotonic()
    try:
        hit = await env.cache.get(key)
    except sqlite3.Error:
        return None  # an unreadable cache is a miss; the write after the call says what is wrong
    if hit is None:
        return None
    try:
        parsed = family.parse(hit.answer)
    except AnswerError:
        return None  # stored by an older niceeval with another schema: ask again
    call = JudgeCall(
        model=model,
        messages=messages,
        input=judged_input,
        score=parsed.score,
        passed=parsed.passed,
        reason=parsed.reason,
        input_tokens=hit.input_tokens,
        output_tokens=hit.output_tokens,
        cache_read_tokens=hit.cache_read_tokens,
        cost=0.0,
        latency=time.monotonic() - started,
        cached=True,
        asked=False,
        fallback=fallback,
    )
    return Consultation(call=call, parsed=parsed)


def _parse(family: Family, answer: ModelAnswer) -> Parsed:
    if answer.error is not None:
        raise AnswerError(answer.error)
    return family.parse(answer.data)


async def _ask_and_parse(env: Env, ref: ModelRef, family: Family, attempt: _Attempt) -> Parsed:
    def request(messages: Messages) -> Request:
        return Request(ref=ref, messages=messages, schema=family.schema, timeout=env.timeout, retry=env.retry)

    if family.embeds:  # no repair turn: the answer is computed, not written by a model
        answer = await embed_similarity(env.clients, request(attempt.messages))
        attempt.spent(answer)
        return _parse(family, answer)
    answer = await ask(env.clients, request(attempt.messages))
    attempt.spent(answer)
    try:
        return _parse(family, answer)
    except AnswerError as first:
        attempt.messages = repair_messages(attempt.messages, answer.text, str(first))
    answer = await ask(env.clients, request(attempt.messages))
    attempt.spent(answer)
    try:
        return _parse(family, answer)
    except AnswerError as second:
        raise _Unparseable(
            f"{ref}: the judge's answer did not fit the schema, even after a repair turn: {second}"
        ) from None


async def _store(cache: JudgeCache, key: str, call: JudgeCall, parsed: Parsed) -> JudgeCall:
    """Store a fresh verdict; a cache that cannot be written never costs the verdict (the call's reason says so)."""
    verdict = CachedVerdict(
        model=call.model,
        answer=parsed.answer,
        input_tokens=call.input_tokens,
        output_tokens=call.output_tokens,
        cache_read_tokens=call.cache_read_tokens,
    )
    try:
        await cache.put(key, verdict)
    except sqlite3.Error as exc:
        return call.model_copy(update={"reason": f"{call.reason} (not stored in the judge cache {cache.path}: {exc})"})
    return call


async def consult(
    env: Env,
    ref: ModelRef,
    messages: Messages,
    family: Family,
    *,
    fallback: bool,
    judged_input: str | None = None,
    sample: int = 0,
) -> Consultation:
    """Ask one model (or the cache) for a verdict; every failure becomes a failed consultation with a cause.

    `judged_input` is the user's input shown in `messages`, kept on the call's record. `sample` is the index of
    this ask among a call's `samples=K`: part of the cache key (the first sample's key is an unsampled call's),
    so each of the K verdicts is stored, and replayed, on its own.
    """
    model = str(ref)
    # a lone surrogate in the judged text cannot be encoded (UTF-8, the cache key): it is judged as U+FFFD
    messages = [{name: without_surrogates(text) for name, text in message.items()} for message in messages]
    judged_input = without_surrogates(judged_input) if judged_input is not None else None
    key = ""  # no cache (--no-cache): no key to compute (a JSON dump and a hash of the whole prompt)
    if env.cache is not None:
        params = _params(ref) if sample == 0 else {**_params(ref), "sample": sample}
        key = cache_key(model, messages, family.schema, params)
    if env.cache is not None and env.cache_mode != "write_only":
        hit = await _from_cache(env, key, model, messages, family, fallback, judged_input)
        if hit is not None:
            return hit
    attempt = _Attempt(messages=messages, judged_input=judged_input)
    if env.cache is not None and env.cache_mode == "read_only_strict":
        reason = f"{model}: not in cache (--cache-only); run without --cache-only to ask the judge and store it"
        await prices_ready([model], env.pricing)  # the record prices its call; the price data loads off the loop, once
        return Consultation(
            call=_record(env, model, attempt, fallback=fallback, reason=reason, cause="provider_error", asked=False)
        )
    cause: Cause
    sent = True
    try:
        parsed = await _ask_and_parse(env, ref, family, attempt)
    except ProviderError as exc:
        cause, reason = exc.cause, str(exc)
        sent = not isinstance(exc, CallRefused) or attempt.input_tokens > 0  # refused at a repair turn: one left
    except _Unparseable as exc:
        cause, reason = "parse_error", str(exc)
    else:
        await prices_ready([model], env.pricing)  # loading since the SDK warmed up, while the request was out
        call = _record(
            env, model, attempt, fallback=fallback, score=parsed.score, passed=parsed.passed, reason=parsed.reason
        )
        if env.cache is not None and env.cache_mode != "read_only_strict":
            call = await _store(env.cache, key, call, parsed)
        return Consultation(call=call, parsed=parsed)
    asked = sent and cause != "no_api_key"  # without a key, or refused by the gate, the request never left
    await prices_ready([model], env.pricing)
    return Consultation(call=_record(env, model, attempt, fallback=fallback, reason=reason, cause=cause, asked=asked))


async def decide(
    env: Env,
    messages: Messages,
    family: Family,
    primary: ModelRef,
    fallback: ModelRef | None,
    *,
    judged_input: str | None = None,
    sample: int = 0,
) -> list[Consultation]:
    """Ask the primary model; when it gives no verdict and a different fallback is set, ask the fallback too."""
    first = await consult(env, primary, messages, family, fallback=False, judged_input=judged_input, sample=sample)
    if not first.failed or fallback is None or fallback == primary:
        return [first]
    second = await consult(env, fallback, messages, family, fallback=True, judged_input=judged_input, sample=sample)
    return [first, second]


async def decide_samples(
    env: Env,
    messages: Messages,
    family: Family,
    models: tuple[ModelRef, ModelRef | None],
    *,
    samples: int,
    judged_input: str | None = None,
) -> list[list[Consultation]]:
    """`decide` asked `samples` times at once on the same messages (each with its own cache key), in order."""
    answers: dict[int, list[Consultation]] = {}
    primary, fallback = models

    async def one(index: int) -> None:
        answers[index] = await decide(env, messages, family, primary, fallback, judged_input=judged_input, sample=index)

    async with anyio.create_task_group() as tg:
        for index in range(samples):
            tg.start_soon(one, index)
    return [answers[index] for index in range(samples)]


async def poll(
    env: Env, ballots: Sequence[tuple[ModelRef, Messages]], family: Family, *, judged_input: str | None = None
) -> list[Consultation]:
    """Ask several models (or one model several questions) at once; the answers come back in ballot order."""
    answers: dict[int, Consultation] = {}

    async def one(index: int, ref: ModelRef, messages: Messages) -> None:
        answers[index] = await consult(env, ref, messages, family, fallback=False, judged_input=judged_input)

    async with anyio.create_task_group() as tg:
        for index, (ref, messages) in enumerate(ballots):
            tg.start_soon(one, index, ref, messages)
    return [answers[index] for index in range(len(ballots))]
