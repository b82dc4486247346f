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
from niceeval.judge._cache import CacheMode, JudgeCache
from niceeval.judge._client import JudgeClients
from niceeval.judge._conversation import ConversationJudges
from niceeval.judge._engine import Env, decide, decide_samples, poll
from niceeval.judge._families import CLOSED_QA, FACTUALITY, G_EVAL, RUBRIC, SIMILAR, SUMMARIZES, SUMMARY, Family
from niceeval.judge._handle import JudgeHandle
from niceeval.judge._prompts import as_text, build_messages
from niceeval.judge._rag import DEFAULT, Rag
from niceeval.judge._ruling import CrashedRuling, Ruling, SampledRuling, SingleRuling, Voter, VoteRuling
from niceeval.judge._templates import fill_criteria, load_template, placeholders, templated_messages
from niceeval.providers import ModelRef, RetryPolicy, parse_model

if TYPE_CHECKING:
    from niceeval._core.settings import JudgeSettings, Price

SCORE_ONLY_THRESHOLD = 0.7
"""The threshold of a judge with no pass flag (`autoevals.*`, `g_eval`, `summarizes`) when `default_threshold` is
unset."""
FAMILIES = (
    "rubric",
    "g_eval",
    "vote",
    "summarizes",
    "similar",
    "autoevals.factuality",
    "autoevals.closed_qa",
    "autoevals.summary",
    "conversation.goal_completion",
    "conversation.role_adherence",
    "conversation.knowledge_retention",
    "rag.faithfulness",
    "rag.answer_relevance",
    "rag.context_relevance",
    "rag.context_recall",
)
_SHOWN = 200


def one_line(prose: object) -> object:
    """A rubric's words on one line: its line breaks and indents are one space each (they carry no meaning)."""
    return " ".join(prose.split()) if isinstance(prose, str) else prose  # not text: refused, naming it as it is


def named(prose: object) -> str:
    """How criteria appear in an assertion's name: on one line, bounded (`rubric('Polite. Names the order.')`).

    A multi-line rubric named by its repr showed a literal `\\n` in every report, chart label and heat map.
    """
    return short(one_line(prose))


class _Reply:
    """The default of `on=`: the agent's reply as it is when the judge method is called."""

    def __repr__(self) -> str:
        return "t.reply"


REPLY = _Reply()


class _Asked:
    """The default of `input=`: the message last sent with `t.send` in the current conversation."""

    def __repr__(self) -> str:
        return "the message last sent with t.send"


ASKED = _Asked()


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


def _criteria(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(
            f"{where}() needs non-empty criteria text, got {value!r}, e.g. {where}('Is the reply polite?')."
        )
    return value


def _unknown(owner: str, name: str) -> NoReturn:
    raise AttributeError(f"{owner} has no judge {name!r}; the judges are: {', '.join(FAMILIES)}.")


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
    def rag(self) -> Rag:
        """Retrieval graders: `faithfulness`, `answer_relevance`, `context_relevance`, `context_recall`."""
        return Rag(self)

    if not TYPE_CHECKING:  # type checkers should still flag a misspelt judge

        def __getattr__(self, name: str) -> NoReturn:
            _unknown("t.judge", name)

    def rubric(
        self,
        criteria: str,
        *,
        on: object = REPLY,
        input: object = ASKED,
        model: str | None = None,
        rubric_prompt: str | None = None,
        samples: int | None = None,
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
        """
        where, location = "t.judge.rubric", caller_location(1)
        variables = self._session.runtime.variables()
        criteria = fill_criteria(_criteria(criteria, where), variables, location)
        template = load_template(rubric_prompt, location) if rubric_prompt is not None else None
        name = f"rubric({named(criteria)})"
        prompt = Prompt(template, variables, location) if template is not None else None
        return self._ask(RUBRIC, criteria, (), on, input, model, name=name, where=where, prompt=prompt, samples=samples)

    def g_eval(
        self,
        criteria: str,
        *,
        on: object = REPLY,
        input: object = ASKED,
        model: str | None = None,
        samples: int | None = None,
    ) -> JudgeHandle:
        """Chain-of-thought grading: the judge writes evaluation steps, applies them, then scores 1-5 (to [0, 1]).

        Args:
            criteria: What a good output does.
            on: The value judged; the agent's reply by default.
            input: What the user asked (context for the judge); the message last sent by default, `None` for none.
            model: The judge model for this call.
            samples: Ask the judge this many times on the same output (default: the settings' `samples`,
                `--judge-samples K`): the score is the samples' mean; a verdict they do not settle is `unstable`.
        """
        where = "t.judge.g_eval"
        name = f"g_eval({named(criteria)})"
        criteria = _criteria(criteria, where)
        return self._ask(G_EVAL, criteria, (), on, input, model, name=name, where=where, samples=samples)

    def vote(
        self,
        criteria: str | Sequence[str],
        *,
        models: Sequence[str] | None = None,
        need: int | None = None,
        on: object = REPLY,
        input: object = ASKED,
        model: str | None = None,
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
        """
        where = "t.judge.vote"
        rubrics = [criteria] if isinstance(criteria, str) else list(criteria)
        if not rubrics:
            raise UsageError(f"{where}() needs criteria: a rubric or a non-empty list of rubrics.")
        rubrics = [_criteria(c, where) for c in rubrics]
        refs = [self._model(m, where) for m in self._vote_models(models, model, where)]
        total = len(rubrics) * len(refs)
        need = total if need is None else need
        if isinstance(need, bool) or not isinstance(need, int) or not 1 <= need <= total:
            raise UsageError(f"{where}(need=...) must be a whole number from 1 to {total} (the voters), got {need!r}.")
        text, asked = self._on(on, where), self._input(input)
        data = [*_input_block(asked), ("output", text)]
        env, threshold = self._session.env, self._session.runtime.settings.default_threshold
        ballots = [(c, ref, build_messages(RUBRIC, c, data)) for c in rubrics for ref in refs]

        async def work() -> Ruling:
            answers = await poll(env, [(ref, messages) for _, ref, messages in ballots], RUBRIC, judged_input=asked)
            voters = [Voter(c, SingleRuling([a])) for (c, _, _), a in zip(ballots, answers, strict=True)]
            return VoteRuling(voters, threshold)

        shown = named(rubrics[0]) if len(rubrics) == 1 else short([one_line(r) for r in rubrics])
        handle = JudgeHandle(
            name=f"vote({shown}, {need} of {total})",
            threshold=need / total,
            expected=_shorten("; ".join(rubrics)),
            actual=_shorten(text),
            location=caller_location(1),
        )
        return self._session.launch(handle, work)

    def similar(self, expected: object, *, on: object = REPLY, model: str | None = None) -> JudgeHandle:
        """Cosine similarity of the embeddings of the output and `expected` (promptfoo's `similar`): soft,
        threshold 0.75 unless `.at_least(x)`. The model is `model=`, else the settings' `embedding_model`, else
        `openai/text-embedding-3-small`, over an OpenAI-compatible `/embeddings` endpoint (`OPENAI_BASE_URL`).
        """
        where = "t.judge.similar"
        reference, text = _data(expected, where, "the expected text"), self._on(on, where)
        chosen = model or self._session.runtime.settings.embedding_model or "openai/text-embedding-3-small"
        ref = parse_model(chosen)
        if ref.provider != "openai":
            raise UsageError(
                f"{where}(): embeddings go through an OpenAI-compatible endpoint; {chosen!r} is not openai/"
            )
        messages = [{"role": "expected", "content": reference}, {"role": "output", "content": text}]
        env = self._session.env

        async def work() -> Ruling:
            return SingleRuling(await decide(env, messages, SIMILAR, ref, None))

        handle = JudgeHandle(
            name=f"similar({short(reference)})",
            threshold=0.75,
            expected=_shorten(reference),
            actual=_shorten(text),
            location=caller_location(1),
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
        """
        where = "t.judge.summarizes"
        document = _data(source, where, "the source document")
        context = [("source", document)]
        return self._ask(SUMMARIZES, None, context, on, input, model, name="summarizes", where=where, samples=samples)

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

    def _on(self, on: object, where: str) -> str:
        runtime = self._session.runtime
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
    ) -> JudgeHandle:
        """A choice grader with extra data blocks (`t.judge.rag`); its `DEFAULT`s are the reply and the last input."""
        on, input = (REPLY if on is DEFAULT else on), (ASKED if input is DEFAULT else input)
        return self._ask(family, None, data, on, input, model, name=name, where=where, samples=samples)

    def _ask_criteria(
        self,
        family: Family,
        criteria: str | None,
        on: str,
        model: str | None,
        *,
        name: str,
        where: str,
        samples: int | None = None,
    ) -> JudgeHandle:
        """A grader of a given value with no input shown (`t.judge.conversation`: the transcript holds it)."""
        return self._ask(family, criteria, [], on, None, model, name=name, where=where, samples=samples)

    def _samples(self, samples: object, where: str) -> int:
        if samples is None:
            return self._session.runtime.settings.samples
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise UsageError(f"{where}(samples=...) must be a whole number of asks, 1 or more, got {samples!r}.")
        return samples

    def _transcript(self) -> str:
        return self._session.runtime.transcript()

    def _ask(
        self,
        family: Family,
        criteria: str | None,
        context: Sequence[tuple[str, str]],
        on: object,
        input: object,
        model: str | None,
        *,
        name: str,
        where: str,
        prompt: Prompt | None = None,
        judged_input: str | None = None,
        samples: int | None = None,
    ) -> JudgeHandle:
        primary, fallback = self._model(model, where), self._fallback(where)
        count = self._samples(samples, where)
        text, asked = self._on(on, where), self._input(input)
        if prompt is not None and criteria is not None:
            messages = templated_messages(family, prompt.template, criteria, text, prompt.variables, prompt.where)
            if "input" not in placeholders(prompt.template):
                asked = None  # the template decides where (and whether) `{input}` appears
        else:
            messages = build_messages(family, criteria, [*_input_block(asked), *context, ("output", text)])
        env = self._session.env

        async def work() -> Ruling:
            # `judged_input`: an input shown in `context` instead (autoevals.summary's source), recorded all the same
            shown = judged_input if judged_input is not None else asked
            if count == 1:
                return SingleRuling(await decide(env, messages, family, primary, fallback, judged_input=shown))
            models = (primary, fallback)
            answers = await decide_samples(env, messages, family, models, samples=count, judged_input=shown)
            return SampledRuling([SingleRuling(answer) for answer in answers])

        expected = criteria if criteria is not None else context[0][1] if context else ""
        threshold = self._session.runtime.settings.default_threshold
        if threshold is None and family is not RUBRIC:
            threshold = SCORE_ONLY_THRESHOLD
        handle = JudgeHandle(
            name=name,
            threshold=threshold,
            expected=_shorten(expected),
            actual=_shorten(text),
            location=caller_location(1),
        )
        return self._session.launch(handle, work)


@dataclass(frozen=True, slots=True)
class Prompt:
    """A `rubric_prompt=` template with the values it is filled from."""

    template: str
    variables: Mapping[str, object]
    where: str | None


def _input_block(asked: str | None) -> list[tuple[str, str]]:
    return [] if asked is None or not asked.strip() else [("input", asked)]


def _shorten(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


class Autoevals:
    """`t.judge.autoevals`: the model picks one labelled choice, and each choice has a fixed score."""

    def __init__(self, judge: Judge) -> None:
        self._judge = judge

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> NoReturn:
            if name == "summarizes":
                raise AttributeError(
                    "t.judge.autoevals has no 'summarizes': niceeval's faithfulness grader is "
                    "t.judge.summarizes(source), and autoevals' Summary (compared with a reference summary) is "
                    "t.judge.autoevals.summary(expected)."
                )
            _unknown("t.judge.autoevals", name)

    def factuality(
        self,
        expected: object,
        *,
        on: object = REPLY,
        input: object = ASKED,
        model: str | None = None,
        samples: int | None = None,
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
        """
        where = "t.judge.autoevals.factuality"
        reference = _data(expected, where, "the expected answer")
        context = [("reference", reference)]
        judge = self._judge
        return judge._ask(FACTUALITY, None, context, on, input, model, name="factuality", where=where, samples=samples)

    def closed_qa(
        self,
        criteria: str,
        *,
        on: object = REPLY,
        input: object = ASKED,
        model: str | None = None,
        samples: int | None = None,
    ) -> JudgeHandle:
        """Does the output meet `criteria`, as an answer to the input? Yes 1.0, no 0.0 (autoevals' ClosedQA: the
        task, the submission and the criterion are shown).

        Args:
            criteria: The question the judge answers yes or no, e.g. "Is the reply polite?".
            on: The value judged; the agent's reply by default.
            input: The task; the message last sent with `t.send` by default, `None` for none.
            model: The judge model for this call.
        """
        where, name = "t.judge.autoevals.closed_qa", f"closed_qa({named(criteria)})"
        criteria = _criteria(criteria, where)
        return self._judge._ask(CLOSED_QA, criteria, (), on, input, model, name=name, where=where, samples=samples)

    def summary(
        self,
        expected: object,
        *,
        on: object = REPLY,
        input: object = ASKED,
        model: str | None = None,
        samples: int | None = None,
    ) -> JudgeHandle:
        """autoevals' Summary: is the output a better summary of the source text (`input`) than `expected`, a
        reference summary? The output better or as good 1.0, the reference better 0.0.

        Args:
            expected: The reference summary.
            on: The summary judged; the agent's reply by default.
            input: The source text; the message last sent with `t.send` by default (which holds the text when
                the eval asked the agent to summarise it).
            model: The judge model for this call.
        """
        where = "t.judge.autoevals.summary"
        reference = _data(expected, where, "the reference summary")
        source = self._judge._input(input)
        if source is None or not source.strip():
            raise UsageError(
                f"{where}() needs the source text: pass input=TEXT, or `await t.send(...)` the text to summarise first."
            )
        judge = self._judge
        context = [("source", source), ("reference", reference)]
        return judge._ask(
            SUMMARY, None, context, on, None, model, name="summary", where=where, judged_input=source, samples=samples
        )


def _data(value: object, where: str, what: str) -> str:
    text = as_text(value)
    if not text.strip():
        raise UsageError(f"{where}() needs {what}, got {value!r}.")
    return text
