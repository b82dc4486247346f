"""`t.judge`: LLM-as-judge assertions that start at once, run concurrently and settle before the run is folded.

The runner builds one `JudgeSession` per run from a `JudgeRuntime`, exposes `session.judge` as `t.judge`, and
after the run's task group has finished records `session.results()`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from niceeval._core.assertion import AssertionResult, grouped
from niceeval._core.errors import UsageError, caller_location
from niceeval._core.values import short
from niceeval.judge._autoevals import Autoevals
from niceeval.judge._cache import CacheMode, JudgeCache
from niceeval.judge._cap import capped, cut_reason
from niceeval.judge._client import JudgeClients
from niceeval.judge._conversation import ConversationJudges
from niceeval.judge._engine import Env, decide, decide_samples, poll
from niceeval.judge._families import G_EVAL, RUBRIC, SIMILAR, SUMMARIZES
from niceeval.judge._graders import OpenAIGraders
from niceeval.judge._handle import JudgeHandle
from niceeval.judge._prompts import as_text
from niceeval.judge._rag import Rag
from niceeval.judge._request import (
    ASKED,
    REPLY,
    TRANSCRIPT,
    JudgeRequest,
    Prompt,
    criteria_text,
    data_text,
    named,
    no_such_judge,
    one_line,
    said,
)
from niceeval.judge._ruling import CrashedRuling, Ruling, SampledRuling, SingleRuling, Voter, VoteRuling
from niceeval.judge._sent import Sent, embedded, request_prompt
from niceeval.judge._templates import fill_criteria, load_template
from niceeval.providers import ModelRef, RetryPolicy, parse_model

if TYPE_CHECKING:
    from niceeval._core.settings import JudgeSettings, Price

SCORE_ONLY_THRESHOLD = 0.7
"""The threshold of a judge with no pass flag (`autoevals.*`, `g_eval`, `summarizes`) when `default_threshold` is
unset."""
_SHOWN = 200


def _no_reply() -> str:
    return ""


def _nothing_asked() -> str | None:
    return None


@dataclass(frozen=True, kw_only=True)
class JudgeRuntime:
    """Everything a run's judge needs from the runner. Build one per run.

    Attributes:
        settings: The judge settings, already merged (the eval's `judge=` over the config's `judge`).
        clients: The SDK clients, shared by the whole suite (`async with JudgeClients() as clients`).
        start: Spawns a coroutine function on the run's task group (`task_group.start_soon`); called from the
            eval's own thread, so for a sync eval it must hop into the event loop.
        reply: Returns the agent's current reply; read when a judge method is called.
        asked: Returns what the eval last sent the agent (`t.send`'s text, not follow-up answers), or None when
            nothing was sent yet; the judges' default `input=`, and how a judge of an unsent reply is caught.
        grader: `--grader MODEL`: judges with this model whatever the eval or the call says.
        pricing: The config's price overrides, for the cost of each call.
        cache: The judge cache, or None (`--no-cache`).
        cache_mode: `read_write`; `write_only` for `--runs` repeats after the first (fresh verdicts, still
            stored, so pass rates stay honest); `read_only_strict` for `--cache-only`.
        retry: How provider requests are retried (`providers.RetryPolicy`).
    """

    settings: JudgeSettings
    clients: JudgeClients
    start: Callable[[Callable[[], Coroutine[Any, Any, None]]], object]
    reply: Callable[[], str] = _no_reply
    asked: Callable[[], str | None] = _nothing_asked
    """Returns the message last sent with `t.send` in the current conversation (None before the first)."""
    transcript: Callable[[], str] = str
    """Returns the run's conversation so far as `User: ...` / `Assistant: ...` lines (`t.judge.conversation`)."""
    variables: Callable[[], Mapping[str, object]] = dict
    """Values for rubric templates: the case's fields and `input` (the last message sent to the agent)."""
    grader: str | None = None
    pricing: Mapping[str, Price] = field(default_factory=dict)
    cache: JudgeCache | None = None
    cache_mode: CacheMode = "read_write"
    retry: RetryPolicy = field(default_factory=RetryPolicy)


class JudgeSession:
    """One run's judging: `judge` is the run's `t.judge`; `results()` gives every verdict, in call order.

    Args:
        runtime: What the runner provides for this run.
    """

    def __init__(self, runtime: JudgeRuntime) -> None:
        self.runtime = runtime
        self.env = Env(
            clients=runtime.clients,
            cache=runtime.cache,
            cache_mode=runtime.cache_mode,
            pricing=runtime.pricing,
            timeout=runtime.settings.timeout,
            retry=runtime.retry,
            max_chars=runtime.settings.max_chars,
        )
        self.handles: list[JudgeHandle] = []

    @property
    def judge(self) -> Judge:
        """The run's `t.judge` (the runner asks once per run). Not kept here, so that the judge and the session are
        freed by reference counting when the run ends instead of waiting in a cycle for the collector."""
        return Judge(self)

    def results(self) -> list[AssertionResult]:
        """The verdicts to record, in call order; call it once the run's task group has finished.

        A verdict the run did not wait for (the eval timed out or crashed first) is inconclusive (`timeout`).
        """
        return [handle.final() for handle in self.handles]

    def launch(self, handle: JudgeHandle, work: Callable[[], Awaitable[Ruling]]) -> JudgeHandle:
        """Register `handle` and start `work` on the run's task group; a crash in it becomes a failed result."""

        async def run() -> None:
            try:
                ruling: Ruling = await work()
            except Exception as exc:
                ruling = CrashedRuling(exc)
            handle._settle(ruling)

        handle.name = grouped(handle.name)
        self.handles.append(handle)
        self.runtime.start(run)
        return handle


class Judge:
    """`t.judge`: ask a judge model about the reply (or any value with `on=`).

    Every method returns a `JudgeHandle` at once; the request runs concurrently with the rest of the eval and
    its verdict is recorded before the run is folded. Judges are soft. Without `.at_least(x)` the threshold is
    the settings' `default_threshold`; when that is unset, judges that only give a score use 0.7 and `rubric` (and
    each voter of a `vote`) has none: the judge's pass decides, as in promptfoo. The model is, first to last:
    `--grader`, the call's `model=`, the eval's `judge=`, the config's `judge`; the settings' `fallback` is asked
    when it gives no verdict.
    """

    def __init__(self, session: JudgeSession) -> None:
        self._session = session

    # The judge families are made when asked for: most evals use none, and kept here they would tie the judge in a
    # reference cycle that only the collector frees.
    @property
    def autoevals(self) -> Autoevals:
        """Graders in the spirit of autoevals: `factuality`, `closed_qa`, `summarizes`."""
        return Autoevals(self)

    @property
    def conversation(self) -> ConversationJudges:
        """Graders over the whole conversation: `goal_completion`, `role_adherence`, `knowledge_retention`."""
        return ConversationJudges(self)

    @property
    def model(self) -> str | None:
        """The judge model a call without `model=` uses (`--grader`, else the settings'), None when none is set."""
        runtime = self._session.runtime
        return runtime.grader or runtime.settings.model

    @property
    def openai(self) -> OpenAIGraders:
        """OpenAI Evals' model graders: `score_model`, `label_model`."""
        return OpenAIGraders(self)

    @property
    def rag(self) -> Rag:
        """Retrieval graders: `faithfulness`, `answer_relevance`, `context_relevance`, `context_recall`."""
        return Rag(self)

    if not TYPE_CHECKING:  # type checkers should still flag a misspelt judge

        def __getattr__(self, name: str) -> NoReturn:
            no_such_judge("t.judge", name)

    def rubric(
        self,
        criteria: str,
        *,
        on: object = REPLY,
        input: object = ASKED,
        model: str | None = None,
        rubric_prompt: str | None = None,
        samples: int | None = None,
        max_chars: int | None = None,
    ) -> JudgeHandle:
        """Grade against a rubric (scoring anchors welcome): passes when the judge says pass and, when a threshold
        is set (`.at_least(x)` or `default_threshold`), the score reaches it.

        Args:
            criteria: The rubric.
            on: The value judged; the agent's reply by default. Non-text values are sent as JSON.
            input: What the user asked, shown to the judge as context: the message last sent with `t.send` by
                default; `None` shows none.
            model: The judge model for this call (`provider/model`).
            rubric_prompt: The whole judge prompt as a template (text, or a file beside the eval), with
                `{output}`, `{rubric}`, `{input}` and the case's fields; the criteria may use them too.
            samples: Ask the judge this many times on the same output (default: the settings' `samples`,
                `--judge-samples K`): the score is the samples' mean; a verdict they do not settle is `unstable`.
            max_chars: The most characters this call's prompt may hold (default: the settings' `max_chars`):
                longer data is cut in the middle, and the prompt and the reason say so.
        """
        where, location = "t.judge.rubric", caller_location(1)
        variables = self._session.runtime.variables()
        criteria = fill_criteria(criteria_text(criteria, where), variables, location)
        template = load_template(rubric_prompt, location) if rubric_prompt is not None else None
        request = JudgeRequest(
            family=RUBRIC,
            name=f"rubric({named(criteria)})",
            where=where,
            criteria=criteria,
            on=on,
            input=input,
            model=model,
            samples=samples,
            max_chars=max_chars,
            prompt=Prompt(template, variables, location) if template is not None else None,
        )
        return self.ask(request)

    def g_eval(
        self,
        criteria: str,
        *,
        on: object = REPLY,
        input: object = ASKED,
        model: str | None = None,
        samples: int | None = None,
        max_chars: int | None = None,
    ) -> JudgeHandle:
        """Chain-of-thought grading: the judge writes evaluation steps, applies them, then scores 1-5 (to [0, 1]).

        Args:
            criteria: What a good output does.
            on: The value judged; the agent's reply by default.
            input: What the user asked (context for the judge); the message last sent by default, `None` for none.
            model: The judge model for this call.
            samples: Ask the judge this many times on the same output (default: the settings' `samples`,
                `--judge-samples K`): the score is the samples' mean; a verdict they do not settle is `unstable`.
            max_chars: The most characters this call's prompt may hold; `rubric` says more.
        """
        where = "t.judge.g_eval"
        name = f"g_eval({named(criteria)})"
        criteria = criteria_text(criteria, where)
        return self.ask(
            JudgeRequest(
                family=G_EVAL,
                name=name,
                where=where,
                criteria=criteria,
                on=on,
                input=input,
                model=model,
                samples=samples,
                max_chars=max_chars,
            )
        )

    def vote(
        self,
        criteria: str | Sequence[str],
        *,
        models: Sequence[str] | None = None,
        need: int | None = None,
        on: object = REPLY,
        input: object = ASKED,
        model: str | None = None,
        max_chars: int | None = None,
    ) -> JudgeHandle:
        """Several rubric judges: every criteria with every model votes; unanimous unless `need=k`.

        A voter passes by the rubric rule (its pass, and the `default_threshold` when set). The vote's score is
        the fraction of voters that passed and its threshold the fraction needed (`need / voters`; `.at_least(x)`
        sets it directly).
        Inconclusive voters make the vote inconclusive only when they could change its outcome.

        Args:
            criteria: One rubric, or several (each is a voter, per model).
            models: The voting models; the resolved judge model by default. `--grader` replaces each of them.
            need: How many voters must pass; all of them by default.
            on: The value judged; the agent's reply by default.
            input: What the user asked (context for the judges); the message last sent by default, `None` for none.
            model: One voting model, when `models=` is not given.
            max_chars: The most characters each voter's prompt may hold; `rubric` says more.
        """
        where = "t.judge.vote"
        rubrics = [criteria] if isinstance(criteria, str) else list(criteria)
        if not rubrics:
            raise UsageError(f"{where}() needs criteria: a rubric or a non-empty list of rubrics.")
        rubrics = [criteria_text(c, where) for c in rubrics]
        refs = [self._model(m, where) for m in self._vote_models(models, model, where)]
        total = len(rubrics) * len(refs)
        need = total if need is None else need
        if isinstance(need, bool) or not isinstance(need, int) or not 1 <= need <= total:
            raise UsageError(f"{where}(need=...) must be a whole number from 1 to {total} (the voters), got {need!r}.")
        text, asked = self._judged(on, where), self._input(input)
        limit = self._max_chars(max_chars, where)
        prompts = {c: _ballot(c, where, text, asked, limit) for c in rubrics}
        ballots = [(c, ref, prompts[c].messages) for c in rubrics for ref in refs]
        shown = prompts[rubrics[0]].input
        env, threshold = self._session.env, self._session.runtime.settings.default_threshold

        async def work() -> Ruling:
            answers = await poll(env, [(ref, messages) for _, ref, messages in ballots], RUBRIC, judged_input=shown)
            voters = [Voter(c, SingleRuling([a])) for (c, _, _), a in zip(ballots, answers, strict=True)]
            return VoteRuling(voters, threshold)

        named_as = named(rubrics[0]) if len(rubrics) == 1 else short([one_line(r) for r in rubrics])
        most_cut = max(prompts.values(), key=lambda p: sum(cut.total - cut.shown for cut in p.cuts))
        handle = JudgeHandle(
            name=f"vote({named_as}, {need} of {total})",
            threshold=need / total,
            expected=_shorten("; ".join(rubrics)),
            actual=_shorten(text),
            location=caller_location(1),
            note=cut_reason(most_cut.cuts, limit),
        )
        return self._session.launch(handle, work)

    def similar(
        self, expected: object, *, on: object = REPLY, model: str | None = None, max_chars: int | None = None
    ) -> JudgeHandle:
        """Cosine similarity of the embeddings of the output and `expected` (promptfoo's `similar`): soft,
        threshold 0.75 unless `.at_least(x)`. The model is `model=`, else the settings' `embedding_model`, else
        `openai/text-embedding-3-small`, over an OpenAI-compatible `/embeddings` endpoint (`OPENAI_BASE_URL`).
        `max_chars` caps the two texts together, as it caps a prompt (`rubric` says more).
        """
        where = "t.judge.similar"
        reference, text = data_text(expected, where, "the expected text"), self._judged(on, where)
        limit = self._max_chars(max_chars, where)
        chosen = model or self._session.runtime.settings.embedding_model or "openai/text-embedding-3-small"
        ref = parse_model(chosen)
        if ref.provider != "openai":
            raise UsageError(
                f"{where}(): embeddings go through an OpenAI-compatible endpoint; {chosen!r} is not openai/"
            )
        sent = capped(embedded, [("expected", reference), ("output", text)], limit, where)
        env = self._session.env

        async def work() -> Ruling:
            return SingleRuling(await decide(env, sent.messages, SIMILAR, ref, None))

        handle = JudgeHandle(
            name=f"similar({short(reference)})",
            threshold=0.75,
            expected=_shorten(reference),
            actual=_shorten(text),
            location=caller_location(1),
            note=cut_reason(sent.cuts, limit),
        )
        return self._session.launch(handle, work)

    def summarizes(
        self,
        source: object,
        *,
        on: object = REPLY,
        input: object = ASKED,
        model: str | None = None,
        samples: int | None = None,
        max_chars: int | None = None,
    ) -> JudgeHandle:
        """Is the output a faithful summary of `source`? Faithful and complete 1.0, faithful but incomplete 0.5,
        unfaithful or not a summary 0.0. (niceeval's own grader; `autoevals.summary` is autoevals' Summary, which
        compares with a reference summary instead.)

        Args:
            source: The document summarised; non-text values are sent as JSON.
            on: The value judged; the agent's reply by default.
            input: What the user asked; the message last sent with `t.send` by default, `None` for none (saves
                tokens when that message holds the whole source again).
            model: The judge model for this call.
            samples: Ask the judge this many times on the same output (default: the settings' `samples`,
                `--judge-samples K`): the score is the samples' mean; a verdict they do not settle is `unstable`.
            max_chars: The most characters this call's prompt may hold; `rubric` says more.
        """
        where = "t.judge.summarizes"
        document = data_text(source, where, "the source document")
        return self.ask(
            JudgeRequest(
                family=SUMMARIZES,
                name="summarizes",
                where=where,
                context=[("source", document)],
                on=on,
                input=input,
                model=model,
                samples=samples,
                max_chars=max_chars,
            )
        )

    def ask(self, request: JudgeRequest) -> JudgeHandle:
        """Ask the judge `request`'s question: the one way every judge method (`autoevals`, `rag` and
        `conversation` too) asks. The handle comes back at once; the verdict settles concurrently."""
        where = request.where
        asked = self._input(request.input)
        if request.input_required is not None and (asked is None or not asked.strip()):
            raise UsageError(f"{where}() needs {request.input_required}.")
        primary, fallback = self._model(request.model, where), self._fallback(where)
        count = self._samples(request.samples, where)
        limit = self._max_chars(request.max_chars, where)
        text = self._judged(request.on, where)
        sent = request_prompt(request, text, asked, limit)
        env, family = self._session.env, request.family

        async def work() -> Ruling:
            if count == 1:
                return SingleRuling(
                    await decide(env, sent.messages, family, primary, fallback, judged_input=sent.input)
                )
            models = (primary, fallback)
            answers = await decide_samples(env, sent.messages, family, models, samples=count, judged_input=sent.input)
            return SampledRuling([SingleRuling(answer) for answer in answers])

        threshold = self._session.runtime.settings.default_threshold
        if threshold is None and family is not RUBRIC:
            threshold = SCORE_ONLY_THRESHOLD
        handle = JudgeHandle(
            name=request.name,
            threshold=threshold,
            expected=_shorten(sent.expected),
            actual=_shorten(text),
            location=caller_location(1),
            note=cut_reason(sent.cuts, limit),
        )
        return self._session.launch(handle, work)

    @staticmethod
    def _vote_models(models: Sequence[str] | None, model: str | None, where: str) -> list[str | None]:
        if models is None:
            return [model]
        if model is not None:
            raise UsageError(f"{where}() takes models=[...] or model=..., not both.")
        if isinstance(models, str) or not models:
            raise UsageError(f"{where}(models=...) takes a non-empty list of model strings, got {models!r}.")
        return list(models)

    def _model(self, model: str | None, where: str) -> ModelRef:
        runtime = self._session.runtime
        chosen = runtime.grader or model or runtime.settings.model
        if chosen is None:
            raise UsageError(
                f"{where}(): no judge model. Set judge={{'model': 'openai/gpt-5.4-mini'}} in define_config() or "
                "define_eval(), pass model='provider/name', or run with --grader MODEL."
            )
        try:
            return parse_model(chosen)
        except UsageError as exc:
            raise UsageError(f"{where}(): {exc}") from None

    def _fallback(self, where: str) -> ModelRef | None:
        fallback = self._session.runtime.settings.fallback
        if fallback is None:
            return None
        try:
            return parse_model(fallback)
        except UsageError as exc:
            raise UsageError(f"{where}(): judge fallback: {exc}") from None

    def _judged(self, on: object, where: str) -> str:
        runtime = self._session.runtime
        if on is TRANSCRIPT:
            return said(runtime.transcript(), where)
        if on is not REPLY:
            return as_text(on)
        if runtime.asked() is None:
            raise UsageError(
                f"{where}() judges the agent's reply, but nothing was sent in this conversation yet: "
                "`await t.send(...)` first, or pass on=VALUE to judge a value of your own."
            )
        return runtime.reply()

    def _input(self, value: object) -> str | None:
        if value is not ASKED:
            return None if value is None else as_text(value)
        runtime = self._session.runtime
        asked = runtime.asked()
        if asked is None:  # nothing sent: a dataset row's own `input` (a labelled output judged with on=)
            field = runtime.variables().get("input")
            return as_text(field) if field not in (None, "") else None
        return asked

    def _samples(self, samples: object, where: str) -> int:
        if samples is None:
            return self._session.runtime.settings.samples
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise UsageError(f"{where}(samples=...) must be a whole number of asks, 1 or more, got {samples!r}.")
        return samples

    def _max_chars(self, max_chars: object, where: str) -> int:
        if max_chars is None:
            return self._session.runtime.settings.max_chars
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
            raise UsageError(f"{where}(max_chars=...) is a number of characters, 1 or more, got {max_chars!r}.")
        return max_chars


def _ballot(criteria: str, where: str, text: str, asked: str | None, max_chars: int) -> Sent:
    """A voter's prompt: what `t.judge.rubric(criteria)` would send."""
    request = JudgeRequest(family=RUBRIC, name=f"rubric({named(criteria)})", where=where, criteria=criteria)
    return request_prompt(request, text, asked, max_chars)


def _shorten(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."
