"""`t.check_case()`: apply a case row's `assert:` entries, each as the matcher, scoped assertion or judge it maps to."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from niceeval._core.assertion import Chainable, Matcher
from niceeval._core.errors import UsageError, caller_location
from niceeval._eval import efficiency, scoped
from niceeval._eval.checks import Check
from niceeval._eval.compare import Comparison, Comparisons
from niceeval._eval.observe import Scoped
from niceeval._eval.scopes import ScopeHost

if TYPE_CHECKING:
    from niceeval._eval.cases import Case
    from niceeval._eval.declared import Declared

C = TypeVar("C", bound=Chainable)
REPLY: Any = object()
"""`on=` not given: the entries apply to the current reply."""
_AT_LINE = re.compile(r":\d+$")


def _chained(item: C, declared: Declared) -> C:
    """The entry's threshold, severity (a gate unless `soft: true` or `weight: 0`, as in promptfoo) and label."""
    entry = declared.entry
    if entry.threshold is not None and declared.type.name != "levenshtein":
        item = item.at_least(entry.threshold)
    if entry.soft or entry.gate is False or (entry.weight == 0 and not entry.gate):  # promptfoo: weight 0 informs
        if isinstance(item, Comparison):
            item = item.soft()
        elif getattr(_inner(item), "severity", "soft") == "gate":
            item = item.at_least(_threshold_of(item))
    else:
        item = item.gate()
    return item.label(entry.label) if entry.label else item


def _inner(item: Chainable) -> object:
    return item.matcher if isinstance(item, Scoped) else item


def _threshold_of(item: Chainable) -> float:
    threshold = getattr(_inner(item), "threshold", None)
    return 1.0 if threshold is None else float(threshold)


def _row_context(row: object) -> object:
    if not isinstance(row, Mapping):
        return None
    variables = row.get("vars")
    found = row.get("context")
    return found if found is not None else variables.get("context") if isinstance(variables, Mapping) else None


def _name_of(item: object) -> str:
    if isinstance(item, Scoped):
        return item.matcher.name
    return str(getattr(item, "name", ""))


def row_of(case: Case | None) -> Any:
    """`t.case`: the dataset row of the run's case, a dict or the eval's `case_model`."""
    if case is None:
        raise UsageError("t.case exists only in evals with cases: @define_eval(cases='data/qa.jsonl').")
    return case.data


def _model_grader(judge: Any, item: Declared, target: dict[str, Any]) -> Any:
    """An OpenAI Evals `score_model` / `label_model` entry, through `t.judge.openai`."""
    from niceeval._eval.declared import grader_of
    from niceeval._eval.openai_graders import score_range, task_text

    grader, model = grader_of(item.entry), item.entry.model
    task = task_text(grader)
    if grader["type"] == "label_model":
        labels, passing = grader["labels"], grader["passing_labels"]
        return judge.openai.label_model(task, labels=labels, passing_labels=passing, model=model, **target)
    threshold = grader.get("pass_threshold")
    return judge.openai.score_model(task, range=score_range(grader), pass_threshold=threshold, model=model, **target)


class CaseChecks:
    """The context's part for `t.check_case()`: a case row's `assert:` entries, recorded as hand-written ones.

    Args:
        case: The run's case (its row and where it is written), None in an eval without cases.
        scope: What the entries record with: the checks, the scoped assertions, the judge and the prices.
        reply: The current reply (`t.reply`), what the entries check and judge by default.
        comparisons: For the `max_score` and `select_best` entries.
    """

    __slots__ = ("_case", "_scope", "_reply", "_comparisons")

    def __init__(
        self, *, case: Case | None, scope: ScopeHost, reply: Callable[[], str], comparisons: Comparisons
    ) -> None:
        self._case = case
        self._scope = scope
        self._reply = reply
        self._comparisons = comparisons

    def check_case(self, entries: object = None, *, on: object = REPLY) -> list[Check | Chainable]:
        """Apply the case's `assert:` entries (or `entries`, in the same form) to the reply (or `on=`).

        Each entry becomes the matcher, scoped assertion or judge it maps to (docs/judge.md lists them), recorded
        like a hand-written one: a gate unless the entry says `soft: true`, with its `threshold` and `metric`
        label. A `max_score` entry weighs the others by their `weight`.

        Returns:
            The handles, in the entries' order (compare entries last).
        """
        # The entries' table loads here: planning loads it before the suite's loop for every eval with cases.
        from niceeval._eval.declared import DeclaredError, parse_entries, row_assertions

        # A dataset file's row (`data/qa.yaml:12`) says which entries, else the call.
        source = self._case.source if self._case is not None else None
        location = source if source is not None and _AT_LINE.search(source) else caller_location(1)
        raw = row_assertions(row_of(self._case)) if entries is None else entries
        try:
            declared = parse_entries(raw)
        except DeclaredError as exc:
            raise UsageError(f"{location}: {exc}") from None
        handles: list[Check | Chainable] = []
        weights: dict[str, float] = {}
        for item in [d for d in declared if d.type.kind != "compare"]:
            handle, name = self._apply(item, on, location)
            handles.append(handle)
            weights[name] = item.entry.weight
        for item in [d for d in declared if d.type.kind == "compare"]:
            if item.type.name == "max_score":
                comparison = self._comparisons.max_score(weights=weights)
            else:
                comparison = self._comparisons.select_best(str(item.entry.value))
            comparison.location = location
            handles.append(_chained(comparison, item))
        return handles

    def _apply(self, item: Declared, on: object, location: str | None) -> tuple[Check | Chainable, str]:
        """The entry recorded, and the name it is recorded under (for max-score weights)."""
        from niceeval._eval.declared import negated

        kind = item.type
        if kind.kind == "value":
            assert kind.build is not None
            matcher = kind.build(item.entry)
            matcher = _chained(negated(matcher) if item.negate else matcher, item)
            value = self._reply() if on is REPLY else on
            checks = self._scope.checks
            return checks.record(value, matcher, location, required=False, verb="check_case"), matcher.name
        if kind.kind == "scoped":
            handle = _chained(Scoped(self._scoped_matcher(item), location), item)
            self._scope.scoped.append(handle)
            return handle, handle.matcher.name
        judged = _chained(self._judge_entry(item, on, location), item)
        return judged, _name_of(judged)

    def _scoped_matcher(self, item: Declared) -> Matcher:
        value, name = item.entry.value, item.type.name
        if name == "max_cost":
            return efficiency.max_cost(float(value), self._scope.pricing)
        if name == "max_tokens":
            return efficiency.max_tokens(int(value), self._scope.pricing)
        if name == "max_latency":
            from niceeval._eval.declared import latency_matcher

            return latency_matcher(float(value))
        if name == "not_called_tool":
            return scoped.not_called_tool(str(value))
        spec = {"name": value} if isinstance(value, str) else dict(value)
        known = {"name", "input", "count", "at_least", "status"}
        if set(spec) - known:
            raise UsageError(f"called_tool takes {sorted(known)}; got {sorted(set(spec) - known)}")
        return scoped.called_tool(spec.pop("name"), **spec)

    def _rag_entry(self, item: Declared, target: dict[str, Any], location: str | None) -> Any:
        entry, rag, name = item.entry, self._scope.judge.get().rag, item.type.name
        if name == "answer_relevance":
            return rag.answer_relevance(model=entry.model, **target)
        if name != "context_recall" and entry.value is not None:
            context = entry.value
        else:
            context = _row_context(row_of(self._case))
        if context is None:
            raise UsageError(
                f"{location}: a {name} entry needs the retrieved context: a `context` field in the row "
                "(or `vars.context`), or the entry's `value`"
            )
        if name == "faithfulness":
            return rag.faithfulness(context, model=entry.model, **target)
        if name == "context_relevance":
            return rag.context_relevance(context, model=entry.model)
        return rag.context_recall(context, entry.value, model=entry.model)

    def _judge_entry(self, item: Declared, on: object, location: str | None) -> Chainable:
        entry, judge = item.entry, self._scope.judge.get()
        if entry.model is None and entry.default_model is not None and judge.model is None:
            entry = entry.model_copy(update={"model": entry.default_model})
            item = replace(item, entry=entry)
        target: dict[str, Any] = {} if on is REPLY else {"on": on}
        text = str(entry.value)
        name = item.type.name
        if name == "rubric":
            handle: Any = judge.rubric(text, model=entry.model, rubric_prompt=entry.rubric_prompt, **target)
        elif name == "factuality":
            handle = judge.autoevals.factuality(text, model=entry.model, **target)
        elif name == "closed_qa":
            handle = judge.autoevals.closed_qa(text, model=entry.model, **target)
        elif name == "g_eval":
            handle = judge.g_eval(text, model=entry.model, **target)
        elif name == "similar":
            handle = judge.similar(text, model=entry.model, **target)
        elif name == "summarizes":
            handle = judge.summarizes(text, model=entry.model, **target)
        elif name == "goal_completion":
            handle = judge.conversation.goal_completion(text, model=entry.model)
        elif name == "role_adherence":
            handle = judge.conversation.role_adherence(text, model=entry.model)
        elif name == "knowledge_retention":
            handle = judge.conversation.knowledge_retention(model=entry.model)
        elif name in ("score_model", "label_model"):
            handle = _model_grader(judge, item, target)
        else:
            handle = self._rag_entry(item, target, location)
        handle.location = location
        chainable: Chainable = handle
        return chainable
