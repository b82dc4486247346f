"""Declarative assertions: the `assert:` entries of a case row, and the one table that maps each onto niceeval.

A row may carry `assert: [{type: includes, value: refund}, {type: rubric, value: "...", threshold: 0.8}]`.
Every type maps onto a matcher, a scoped assertion or a judge that already exists, so reports, scores, max-score
weights and the store treat them like hand-written checks. `TYPES` is the only place the mapping lives: the
loader checks rows with it, `t.check_case()` applies it, and docs/judge.md's coverage table is generated from it
(`coverage_table()`; a test fails when the page drifts).
"""

from __future__ import annotations

import difflib
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from niceeval._core.assertion import Inconclusive, Matcher, ScoreLike, Verdict
from niceeval._core.errors import UsageError
from niceeval._core.events import Event, MessageEvent
from niceeval._core.values import short
from niceeval.expect import equals, excludes, includes, matches

ValueKind = Literal[
    "text", "regex", "texts", "any", "schema", "optional schema", "number", "tool", "none", "optional text", "grader"
]
Build = Callable[["Entry"], Matcher]
Kind = Literal["value", "scoped", "judge", "compare"]


class Entry(BaseModel):
    """One `assert:` entry of a case row, as written (promptfoo's keys where they mean the same)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    type: str
    value: Any = None
    threshold: float | None = Field(default=None, ge=0)
    """A soft threshold in [0, 1] for scores; for `levenshtein` the most edits allowed, as in promptfoo."""
    weight: float = Field(default=1.0, ge=0)
    """The entry's weight in a `max_score` entry of the same case (promptfoo's `weight`)."""
    gate: bool | None = None
    soft: bool | None = None
    label: str | None = Field(default=None, alias="metric")
    """The assertion's name in reports (promptfoo's `metric`)."""
    model: str | None = Field(default=None, alias="provider")
    """The judge model of a judge entry (`provider/model`; promptfoo's `provider`)."""
    rubric_prompt: str | None = Field(default=None, alias="rubricPrompt")
    default_model: str | None = None
    """The judge model when neither the entry, `--grader` nor the judge settings name one (promptfoo's default
    grader, for a promptfoo config's judge entries)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class AssertionType:
    """One declarative assertion type and what it maps onto."""

    name: str
    kind: Kind
    value: ValueKind
    maps_to: str
    """The niceeval call it becomes, for the docs."""
    promptfoo: tuple[str, ...] = ()
    """promptfoo's names for it (a `not-` prefix negates a value type, as in promptfoo)."""
    pydantic_evals: str = ""
    """pydantic-evals' evaluator that loads as this type (in a dataset's `evaluators:`)."""
    note: str = ""
    """Where it differs from the peer's grader, honestly."""
    build: Build | None = None
    """For value types: the matcher, built from the entry."""
    negatable: bool = False


def _text(entry: Entry) -> str:
    return str(entry.value)


def _icontains(entry: Entry) -> Matcher:
    text = _text(entry)
    return includes(re.compile(re.escape(text), re.IGNORECASE)).label(f"icontains({text!r})")


def _starts_with(entry: Entry) -> Matcher:
    text = _text(entry)
    return includes(re.compile("^" + re.escape(text))).label(f"starts_with({text!r})")


def _regex(entry: Entry) -> Matcher:
    return includes(re.compile(_text(entry)))


def _all_or_any(entry: Entry, *, every: bool, fold: bool) -> Matcher:
    needles = [str(v) for v in entry.value]
    name = f"{'contains_all' if every else 'contains_any'}{'_i' if fold else ''}({short(needles)})"

    def score(value: Any) -> ScoreLike:
        text = str(value).lower() if fold else str(value)
        found = [n for n in needles if (n.lower() if fold else n) in text]
        missing = [n for n in needles if n not in found]
        ok = not missing if every else bool(found)
        reason = f"missing {short(missing)}" if every else f"none of {short(needles)} found"
        return True if ok else Verdict(False, reason, actual=short(value))

    return Matcher(name=name, score_fn=score, expected=f"{'all' if every else 'any'} of {short(needles)}")


def _equals(entry: Entry) -> Matcher:
    expected = entry.value
    if isinstance(expected, str):
        return equals(expected)
    inner = equals(expected)

    def score(value: Any) -> ScoreLike:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return Verdict(False, "expected JSON equal to the value, the output is not JSON", actual=short(value))
        return inner.score_fn(value)  # type: ignore[return-value]

    return Matcher(name="equals", score_fn=score, expected=short(expected))


def _is_json(entry: Entry) -> Matcher:
    if entry.value is not None:
        return matches(entry.value).label("is_json")

    def score(value: Any) -> ScoreLike:
        if not isinstance(value, str):
            return True
        try:
            json.loads(value)
        except ValueError as exc:
            return Verdict(False, f"not valid JSON: {exc}", actual=short(value))
        return True

    return Matcher(name="is_json", score_fn=score, expected="valid JSON")


def _contains_json(entry: Entry) -> Matcher:
    schema = matches(entry.value) if entry.value is not None else None
    decoder = json.JSONDecoder()

    def score(value: Any) -> ScoreLike:
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        misses: list[ScoreLike] = []
        start = 0
        while (start := _next_bracket(text, start)) >= 0:
            try:
                found, end = decoder.raw_decode(text, start)
            except ValueError:
                start += 1
                continue
            verdict = True if schema is None else schema.score_fn(found)
            if verdict is True or (isinstance(verdict, Verdict) and verdict.score == 1.0):
                return True
            misses.append(verdict)  # type: ignore[arg-type]
            start = end
        if misses:  # promptfoo's rule: some JSON in the output matches the schema
            first = misses[0]
            why = first.reason if isinstance(first, Verdict) else "does not match the schema"
            return Verdict(False, f"no JSON in the output matches the schema ({len(misses)} found; the first: {why})")
        return Verdict(False, "no JSON object or array in the output", actual=short(value))

    return Matcher(name="contains_json", score_fn=score, expected="JSON in the output")


def _next_bracket(text: str, start: int) -> int:
    found = [i for i in (text.find("{", start), text.find("[", start)) if i >= 0]
    return min(found) if found else -1


_JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "int": int,
    "float": (int, float),
    "bool": bool,
    "dict": dict,
    "list": list,
}


def _is_instance(entry: Entry) -> Matcher:
    name = _text(entry)

    def score(value: Any) -> ScoreLike:
        if name == "str":
            return isinstance(value, str) or Verdict(False, f"a {type(value).__name__}, not text", actual=short(value))
        try:
            parsed = json.loads(value) if isinstance(value, str) else value
        except ValueError:
            return Verdict(False, f"the output is not JSON, so not a {name}", actual=short(value))
        wanted = _JSON_TYPES.get(name)
        ok = wanted is not None and isinstance(parsed, wanted) and not (name != "bool" and isinstance(parsed, bool))
        return ok or Verdict(False, f"a {type(parsed).__name__}, not a {name}", actual=short(value))

    return Matcher(name=f"is_instance({name})", score_fn=score, expected=f"a {name}")


def _levenshtein(entry: Entry) -> Matcher:
    from niceeval.expect._runtime import edit_distance  # loaded before the suite's loop by `plan` (EDIT_DISTANCES)

    expected, limit = _text(entry), entry.threshold if entry.threshold is not None else 5.0

    def score(value: Any) -> ScoreLike:
        distance = edit_distance(expected, str(value))
        return Verdict(distance <= limit, f"{distance} edits (at most {limit:g})", actual=short(value))

    return Matcher(name=f"levenshtein({short(expected)})", score_fn=score, expected=f"within {limit:g} edits")


def _similarity(entry: Entry) -> Matcher:
    from niceeval.expect import similarity

    return similarity(_text(entry))


def grader_of(entry: Entry) -> dict[str, Any]:
    """An OpenAI grader entry's grader, its `type` the entry's."""
    return {**entry.value, "type": entry.type}


def _grader(entry: Entry) -> Matcher:
    from niceeval._eval.openai_graders import matcher

    return matcher(grader_of(entry))


def _openai(name: str, kind: Kind, maps_to: str, note: str) -> AssertionType:
    build = _grader if kind == "value" else None
    return AssertionType(name=name, kind=kind, value="grader", maps_to=maps_to, note=note, build=build)


def _not_run(entry: Entry) -> Matcher:
    why = dict(entry.value)

    def score(value: Any) -> ScoreLike:
        raise Inconclusive("not_run", f"not run: {why['why']}")

    return Matcher(name=f"{why['type']} (not run)", score_fn=score, expected=str(why["type"]))


EDIT_DISTANCES = frozenset({"levenshtein", "similarity"})
"""The types whose matchers load `niceeval.expect._fuzzy` (rapidfuzz): planning loads it, before the suite's loop."""


def latency_matcher(limit: float) -> Matcher:
    """The agent's answer time summed over the run's turns (a user message to the next reply) is within `limit`
    seconds: 1.0 within, `limit / actual` beyond."""

    def score(events: Sequence[Event]) -> ScoreLike:
        total, asked = 0.0, None
        for event in events:
            if isinstance(event, MessageEvent) and event.role == "user":
                asked = event.at
            elif isinstance(event, MessageEvent) and event.role == "assistant" and asked is not None:
                total += _seconds(asked, event.at)
                asked = None
        ratio = 1.0 if total <= limit else limit / total
        return Verdict(ratio, f"{total:.3f} s to answer (at most {limit:g} s)", actual=f"{total:.3f} s")

    return Matcher(name=f"max_latency({limit:g}s)", score_fn=score, expected=f"at most {limit:g} s")


def _seconds(start: datetime, end: datetime) -> float:
    return max((end - start).total_seconds(), 0.0)


def negated(matcher: Matcher) -> Matcher:
    """The opposite of a pass/fail matcher: promptfoo's `not-` prefix (sync when the matcher is)."""
    expected = f"not {matcher.expected or matcher.name}"

    def flip(raw: ScoreLike, value: Any) -> ScoreLike:
        verdict = raw if isinstance(raw, Verdict) else Verdict(raw)
        passed = float(verdict.score) < matcher.threshold
        return Verdict(passed, "" if passed else f"expected {expected}", actual=short(value))

    async def flip_later(raw: Awaitable[ScoreLike], value: Any) -> ScoreLike:
        return flip(await raw, value)

    def score(value: Any) -> ScoreLike | Awaitable[ScoreLike]:
        raw = matcher.score_fn(value)
        return flip_later(raw, value) if inspect.isawaitable(raw) else flip(raw, value)

    return Matcher(name=f"not {matcher.name}", score_fn=score, expected=expected)


def _value(
    name: str, value: ValueKind, maps_to: str, build: Build, *promptfoo: str, note: str = "", pydantic_evals: str = ""
) -> AssertionType:
    return AssertionType(
        name=name,
        kind="value",
        value=value,
        maps_to=maps_to,
        build=build,
        promptfoo=promptfoo,
        pydantic_evals=pydantic_evals,
        note=note,
        negatable=True,
    )


def _judged(
    name: str, value: ValueKind, maps_to: str, *promptfoo: str, note: str = "", pydantic_evals: str = ""
) -> AssertionType:
    return AssertionType(
        name=name,
        kind="judge",
        value=value,
        maps_to=maps_to,
        promptfoo=promptfoo,
        pydantic_evals=pydantic_evals,
        note=note,
    )


TYPES: tuple[AssertionType, ...] = (
    _value(
        "includes",
        "text",
        "`expect.includes(value)`",
        lambda e: includes(_text(e)),
        "contains",
        pydantic_evals="`Contains`",
    ),
    _value("excludes", "text", "`expect.excludes(value)`", lambda e: excludes(_text(e))),
    _value(
        "icontains",
        "text",
        "`expect.includes(re.compile(value, re.I))`",
        _icontains,
        "icontains",
        pydantic_evals="`Contains` with `case_sensitive: false`",
    ),
    _value("starts_with", "text", "`expect.includes(re.compile('^' + value))`", _starts_with, "starts-with"),
    _value("regex", "regex", "`expect.includes(re.compile(value))`", _regex, "regex"),
    _value(
        "contains_all",
        "texts",
        "every value is in the output",
        lambda e: _all_or_any(e, every=True, fold=False),
        "contains-all",
    ),
    _value(
        "contains_any",
        "texts",
        "some value is in the output",
        lambda e: _all_or_any(e, every=False, fold=False),
        "contains-any",
    ),
    _value(
        "icontains_all",
        "texts",
        "`contains_all`, ignoring case",
        lambda e: _all_or_any(e, every=True, fold=True),
        "icontains-all",
    ),
    _value(
        "icontains_any",
        "texts",
        "`contains_any`, ignoring case",
        lambda e: _all_or_any(e, every=False, fold=True),
        "icontains-any",
    ),
    _value(
        "equals",
        "any",
        "`expect.equals(value)`",
        _equals,
        "equals",
        pydantic_evals="`Equals`, `EqualsExpected`",
        note="a non-text value is compared with the output parsed as JSON",
    ),
    _value(
        "is_instance",
        "text",
        "the output is text (`str`) or JSON of that type (`int`, `float`, `bool`, `dict`, `list`)",
        _is_instance,
        pydantic_evals="`IsInstance`",
        note="the agent's reply is text, so other types are read from it as JSON",
    ),
    _value("is_json", "optional schema", "`expect.matches(value)` (any JSON without a value)", _is_json, "is-json"),
    _value("json_schema", "schema", "`expect.matches(value)`", _is_json),
    _value(
        "contains_json",
        "optional schema",
        "some JSON in the output (any of them, as promptfoo), `expect.matches(value)`",
        _contains_json,
        "contains-json",
    ),
    _value(
        "levenshtein",
        "text",
        "edit distance to the value at most `threshold` (5)",
        _levenshtein,
        "levenshtein",
        note="`threshold` is a number of edits, as in promptfoo; `similarity` is the normalised ratio",
    ),
    _value("similarity", "text", "`expect.similarity(value)` (normalised Levenshtein, soft 0.8)", _similarity),
    _judged(
        "rubric",
        "text",
        "`t.judge.rubric(value)`",
        "llm-rubric",
        note="`rubricPrompt` becomes `rubric_prompt=`; `provider` the judge model; LLMJudge's "
        "`include_expected_output` adds the expected output to the rubric, and the input is always shown",
        pydantic_evals="`LLMJudge`",
    ),
    _judged(
        "factuality",
        "text",
        "`t.judge.autoevals.factuality(value)`",
        "factuality",
        "model-graded-factuality",
        note="named choices with autoevals' scores: a superset (0.6) or subset (0.4) misses the default 0.7, where "
        "promptfoo passes every choice but a contradiction (`threshold: 0.4` is promptfoo's rule)",
    ),
    _judged("closed_qa", "text", "`t.judge.autoevals.closed_qa(value)`", "model-graded-closedqa"),
    _judged(
        "g_eval",
        "text",
        "`t.judge.g_eval(value)`",
        "g-eval",
        note="scores 1-5 mapped to [0, 1]; promptfoo's g-eval asks for 0-10",
    ),
    _judged(
        "faithfulness",
        "optional text",
        "`t.judge.rag.faithfulness(context)`: the row's `context` (or `vars.context`), or the value",
        "context-faithfulness",
        note="labelled choices (1.0 / 0.5 / 0.0) where promptfoo and RAGAS count the supported claims",
    ),
    _judged(
        "answer_relevance",
        "none",
        "`t.judge.rag.answer_relevance()`",
        "answer-relevance",
        note="asked directly, where promptfoo generates questions from the answer and compares embeddings",
    ),
    _judged("context_relevance", "optional text", "`t.judge.rag.context_relevance(context)`", "context-relevance"),
    _judged(
        "context_recall",
        "text",
        "`t.judge.rag.context_recall(context, value)`: does the context hold the expected answer's facts",
        "context-recall",
    ),
    _judged(
        "goal_completion",
        "text",
        "`t.judge.conversation.goal_completion(value)` over the run's transcript",
        note="DeepEval's ConversationCompleteness / goal accuracy, as labelled choices",
    ),
    _judged(
        "role_adherence",
        "text",
        "`t.judge.conversation.role_adherence(value)` over the run's transcript",
        note="DeepEval's RoleAdherence, as labelled choices",
    ),
    _judged(
        "knowledge_retention",
        "none",
        "`t.judge.conversation.knowledge_retention()` over the run's transcript",
        note="DeepEval's KnowledgeRetention, as labelled choices",
    ),
    _judged(
        "similar",
        "text",
        "`t.judge.similar(value)`: cosine of embeddings (`embedding_model`), soft 0.75",
        "similar",
        note="through an OpenAI-compatible `/embeddings` only; cached and priced like a judge call",
    ),
    _judged("summarizes", "text", "`t.judge.summarizes(value)` (the source)"),
    _openai(
        "string_check",
        "value",
        "the grader's `input` compared with its `reference`: `eq`, `ne`, `like` (contains), `ilike`",
        "OpenAI Evals grader, as written in `testing_criteria`; a gate",
    ),
    _openai(
        "text_similarity",
        "value",
        "a text metric of `input` against `reference` (sacrebleu, nltk, rouge-score, rapidfuzz), "
        "passing at `pass_threshold`",
        "OpenAI Evals grader; `cosine` loads as `similar` (embeddings); METEOR without WordNet's data matches "
        "exact words and stems only",
    ),
    _openai(
        "score_model",
        "judge",
        "`t.judge.openai.score_model(messages, range=, pass_threshold=)`",
        "OpenAI Evals grader; its messages are the task, the output is shown as tagged data",
    ),
    _openai(
        "label_model",
        "judge",
        "`t.judge.openai.label_model(messages, labels=, passing_labels=)`",
        "OpenAI Evals grader; passes on a passing label",
    ),
    _openai(
        "multi",
        "value",
        "`calculate_output` over its string_check / text_similarity graders (arithmetic only, read with `ast`)",
        "OpenAI Evals grader; passes at `pass_threshold`, else recorded as a score",
    ),
    AssertionType(
        name="not_run",
        kind="value",
        value="schema",
        maps_to="an inconclusive result named `TYPE (not run)`, with why and what to write instead",
        note="a peer's check niceeval never runs (inline JavaScript, Python, a webhook) in a promptfoo config",
        build=_not_run,
    ),
    AssertionType(
        name="max_cost",
        kind="scoped",
        value="number",
        maps_to="`t.max_cost(value)` (USD)",
        promptfoo=("cost",),
        note="promptfoo's limit is its `threshold`; loaded as the value",
    ),
    AssertionType(
        name="max_latency",
        kind="scoped",
        value="number",
        maps_to="the answer time, at most `value` seconds",
        promptfoo=("latency",),
        pydantic_evals="`MaxDuration`",
        note="promptfoo's `threshold` is milliseconds; loaded as seconds; the time the agent took, not the task's",
    ),
    AssertionType(name="max_tokens", kind="scoped", value="number", maps_to="`t.max_tokens(value)`"),
    AssertionType(
        name="called_tool",
        kind="scoped",
        value="tool",
        maps_to="`t.called_tool(name, input=..., count=...)`: a name, or `{name, input, count, at_least}`",
    ),
    AssertionType(name="not_called_tool", kind="scoped", value="text", maps_to="`t.not_called_tool(value)`"),
    AssertionType(
        name="max_score",
        kind="compare",
        value="none",
        maps_to="`t.max_score(weights=...)` with the entries' weights",
        promptfoo=("max-score",),
    ),
    AssertionType(
        name="select_best", kind="compare", value="text", maps_to="`t.select_best(value)`", promptfoo=("select-best",)
    ),
)

INSPECT_NEAREST: dict[str, str] = {
    "icontains": "`includes()` (its default ignores case)",
    "regex": "`pattern()`",
    "equals": "`exact()` (which also normalises whitespace and punctuation)",
    "rubric": "`model_graded_qa()`",
    "factuality": "`model_graded_fact()`",
}
"""Inspect's scorer nearest to each type, for the docs (a task's scorer is Python and never loaded)."""

DEEPEVAL_NEAREST: dict[str, str] = {
    "json_schema": "`JsonCorrectnessMetric`",
    "g_eval": "`GEval`",
    "summarizes": "`SummarizationMetric`",
    "faithfulness": "`FaithfulnessMetric`",
    "answer_relevance": "`AnswerRelevancyMetric`",
    "context_relevance": "`ContextualRelevancyMetric`",
    "context_recall": "`ContextualRecallMetric`",
    "goal_completion": "`ConversationCompletenessMetric`",
    "role_adherence": "`RoleAdherenceMetric`",
    "knowledge_retention": "`KnowledgeRetentionMetric`",
    "called_tool": "`ToolCorrectnessMetric`",
}
"""DeepEval's metric nearest to each type, for the docs (DeepEval suites are Python; nothing is loaded)."""

BY_NAME: dict[str, AssertionType] = {t.name: t for t in TYPES}
ALIASES: dict[str, str] = {alias: t.name for t in TYPES for alias in t.promptfoo}

NO_EQUIVALENT: dict[str, str] = {
    "javascript": "inline JavaScript is not run; write the check in Python (`satisfies(fn, label)`)",
    "python": "inline Python from a data file is not run; write it as a check in an eval module",
    "webhook": "write a `make_assertion` that calls your service",
    "moderation": "no moderation API is called; a `rubric` can stand in",
    "classifier": "no classifier model is run; a `rubric` or `closed_qa` can stand in",
    "perplexity": "needs token log-probabilities, which niceeval does not record",
    "perplexity-score": "needs token log-probabilities, which niceeval does not record",
    "rouge-n": "no ROUGE scorer; `similarity` or `levenshtein` are the nearest",
    "bleu": "no BLEU scorer; `similarity` or `levenshtein` are the nearest",
    "gleu": "no GLEU scorer; `similarity` or `levenshtein` are the nearest",
    "meteor": "no METEOR scorer; `similarity` or `levenshtein` are the nearest",
    "is-sql": "no SQL parser; `regex` or a `satisfies` check",
    "is-xml": "no XML check; a `satisfies` check with xml.etree",
    "contains-xml": "no XML check; a `satisfies` check with xml.etree",
    "is-refusal": "a `rubric` ('the reply refuses') stands in",
    "guardrails": "no guardrail provider is called",
    "conversation-relevance": "not built yet; a `rubric` over the session stands in",
    "is-valid-openai-tools-call": "`called_tool` checks the tool calls the agent made",
    "is-valid-openai-function-call": "`called_tool` checks the tool calls the agent made",
    "tool-call-f1": "`called_tool` per expected tool",
}
"""promptfoo types with no niceeval equivalent: listed once when a file using them loads, never dropped silently."""


class DeclaredError(UsageError):
    """An `assert:` entry that cannot be used; the message says which entry and what to write."""


def type_of(name: str) -> AssertionType:
    """The assertion type called `name` (a promptfoo name too), or an error naming the closest type."""
    bare = name[4:] if name.startswith("not-") else name
    found = BY_NAME.get(bare) or BY_NAME.get(ALIASES.get(bare, ""))
    if found is not None:
        return found
    if bare in NO_EQUIVALENT:
        raise DeclaredError(f"type {name!r} has no niceeval equivalent: {NO_EQUIVALENT[bare]}")
    known = [*BY_NAME, *ALIASES]
    close = difflib.get_close_matches(bare, known, n=1, cutoff=0.5)
    hint = f"did you mean {close[0]!r}?" if close else f"known types: {', '.join(BY_NAME)}"
    raise DeclaredError(f"unknown assertion type {name!r}; {hint}")


@dataclass(frozen=True, kw_only=True, slots=True)
class Declared:
    """A checked entry: its type, whether it is negated, and the entry itself."""

    type: AssertionType
    entry: Entry
    negate: bool = False
    position: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)


def _check_value(kind: ValueKind, value: object, name: str) -> None:
    problem = None
    if kind in ("text", "regex") and (not isinstance(value, str) or not value.strip()):
        problem = "a non-empty string"
    elif kind == "texts" and (isinstance(value, str) or not isinstance(value, list) or not value):
        problem = "a list of strings"
    elif kind in ("schema", "grader") and not isinstance(value, dict):
        problem = "a JSON Schema object" if kind == "schema" else "the grader, as in OpenAI's testing_criteria"
    elif kind == "optional text" and value is not None and (not isinstance(value, str) or not value.strip()):
        problem = "a non-empty string, or nothing"
    elif kind == "optional schema" and value is not None and not isinstance(value, dict):
        problem = "a JSON Schema object, or nothing"
    elif kind == "number" and (isinstance(value, bool) or not isinstance(value, int | float) or value <= 0):
        problem = "a positive number"
    elif kind == "tool" and not (isinstance(value, str) and value) and not _tool_spec(value):
        problem = "a tool name, or {name: ..., input: ..., count: ...}"
    elif kind == "any" and value is None:
        problem = "the expected value"
    if problem is not None:
        raise DeclaredError(f"{name}: `value` must be {problem}, got {short(value)}")
    if kind == "regex":
        try:
            re.compile(str(value))
        except re.error as exc:
            raise DeclaredError(f"{name}: `value` is not a valid regular expression: {exc}") from None


def _check_grader(value: object, name: str) -> None:
    from niceeval._eval.openai_graders import GraderError, check

    try:
        check(value)
    except GraderError as exc:
        raise DeclaredError(f"{name}: {exc}") from None


_JS_NAMED_GROUP = re.compile(r"\(\?<(?=[A-Za-z_])")
_JS_BACKREFERENCE = re.compile(r"\\k<(\w+)>")


def _coerced(kind: ValueKind, value: object) -> object:
    """A value as promptfoo reads it: a number where text is wanted is its text (`contains: 24.01`), a
    comma-separated string where a list is wanted is the list, and a regex in JavaScript's named-group syntax
    (`(?<year>...)`, `\\k<year>`) is written in Python's."""
    if kind in ("text", "regex") and isinstance(value, int | float) and not isinstance(value, bool):
        return str(int(value)) if float(value).is_integer() else repr(value)
    if kind == "texts" and isinstance(value, str) and value.strip():
        return [part.strip() for part in value.split(",") if part.strip()]
    if kind == "regex" and isinstance(value, str):
        return _JS_BACKREFERENCE.sub(r"(?P=\1)", _JS_NAMED_GROUP.sub("(?P<", value))
    return value


def _tool_spec(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("name"), str)


def parse_entry(raw: object, position: int) -> Declared:
    """One `assert:` entry, checked; raises `DeclaredError` naming the entry (`assert[2]`) and the fix."""
    where = f"assert[{position}]"
    if not isinstance(raw, Mapping):
        raise DeclaredError(f"{where}: an entry is an object like {{type: includes, value: ...}}, got {short(raw)}")
    name = raw.get("type")
    if not isinstance(name, str) or not name:
        raise DeclaredError(f"{where}: an entry needs `type:` (e.g. includes, regex, rubric, max_cost)")
    try:
        kind = type_of(name)
    except DeclaredError as exc:
        raise DeclaredError(f"{where}: {exc}") from None
    if "value" in raw:
        raw = {**raw, "value": _coerced(kind.value, raw["value"])}
    value = raw.get("value")
    if kind.name in ("max_cost", "max_latency") and value is None and raw.get("threshold") is not None:
        value = raw["threshold"]  # promptfoo's cost and latency put the limit in `threshold`
        if kind.name == "max_latency" and name == "latency":
            value = float(value) / 1000.0
        raw = {k: v for k, v in raw.items() if k != "threshold"} | {"value": value}
    try:
        entry = Entry.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(_explain(e) for e in exc.errors())
        raise DeclaredError(f"{where} ({name}): {problems}") from None
    negate = name.startswith("not-")
    if negate and not kind.negatable:
        raise DeclaredError(f"{where}: {name!r}: only value checks can be negated with `not-`")
    if entry.gate and entry.soft:
        raise DeclaredError(f"{where} ({name}): `gate: true` and `soft: true` contradict each other; keep one")
    _check_value(kind.value, entry.value, f"{where} ({name})")
    if kind.value == "grader":
        _check_grader(grader_of(entry), f"{where} ({name})")
    if kind.name not in ("levenshtein",) and entry.threshold is not None and entry.threshold > 1:
        raise DeclaredError(f"{where} ({name}): `threshold` is a score in [0, 1], got {entry.threshold:g}")
    return Declared(type=kind, entry=entry, negate=negate, position=position)


def _explain(error: Mapping[str, Any]) -> str:
    key = ".".join(map(str, error["loc"])) or "entry"
    if error["type"] == "extra_forbidden":
        known = [key for name, info in Entry.model_fields.items() for key in (info.alias, name) if key]
        close = difflib.get_close_matches(key, known, n=1)
        return f"unknown key {key!r}" + (f": did you mean {close[0]!r}?" if close else f" (keys: {', '.join(known)})")
    return f"{key}: {error['msg']}"


def parse_entries(raw: object) -> list[Declared]:
    """A row's `assert:` list, checked (see `parse_entry`)."""
    if raw is None:
        return []
    if isinstance(raw, Mapping):
        raw = [raw]
    if not isinstance(raw, list):
        raise DeclaredError(f"`assert` is a list of entries like [{{type: includes, value: ...}}], got {short(raw)}")
    return [parse_entry(item, i) for i, item in enumerate(raw)]


def row_assertions(row: object) -> object:
    """The `assert` field of a case row (a dict, or a pydantic model with an `assert_` field aliased `assert`)."""
    if isinstance(row, Mapping):
        return row.get("assert")
    if isinstance(row, BaseModel):
        return row.model_dump(by_alias=True).get("assert")
    return None


def coverage_table() -> str:
    """docs/judge.md's table of declarative types, generated from `TYPES` and `NO_EQUIVALENT`."""
    lines = [
        "| `type:` | promptfoo | pydantic-evals | Inspect | DeepEval | niceeval | differences |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for kind in TYPES:
        peers = ", ".join(f"`{p}`" for p in kind.promptfoo) or "-"
        if kind.negatable and kind.promptfoo:
            peers += " (and `not-`)"
        nearest = (kind.pydantic_evals, INSPECT_NEAREST.get(kind.name, ""), DEEPEVAL_NEAREST.get(kind.name, ""))
        others = " | ".join(text or "-" for text in nearest)
        lines.append(f"| `{kind.name}` | {peers} | {others} | {kind.maps_to} | {kind.note or '-'} |")
    for name, why in NO_EQUIVALENT.items():
        lines.append(f"| - | `{name}` | - | - | - | none | {why} |")
    lines.append("| - | - | `HasMatchingSpan`, custom evaluators | - | - | none | listed at load, not run |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # python -m niceeval._eval.declared: the table for docs/judge.md
    print(coverage_table(), end="")
