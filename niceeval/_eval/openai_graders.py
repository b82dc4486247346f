"""OpenAI Evals' graders as niceeval checks: templates, the text metrics, `multi` formulas, and the checks of a
grader's definition.

A grader comes from an eval's `testing_criteria` with its `{{item.*}}` templates already filled from the item
(`openai_evals.py`); `{{sample.*}}` is filled here, from the reply, when the check runs. `string_check` and
`text_similarity` (but `cosine`) are matchers; `cosine`, `score_model` and `label_model` are judge calls
(`case_checks.py`), and `multi` combines computed graders by a formula read with `ast`, arithmetic only.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import math
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

from niceeval._core.assertion import Matcher, ScoreLike, Verdict
from niceeval._core.values import short

TEMPLATE = re.compile(r"\{\{\s*([A-Za-z_][\w.\[\]]*)\s*\}\}")
SAMPLE_FIELDS = ("output_text", "output_json")
OPERATIONS = ("eq", "ne", "like", "ilike")
METRICS = ("fuzzy_match", "bleu", "gleu", "meteor", "cosine", *(f"rouge_{n}" for n in "12345l"))
COMPUTED = ("string_check", "text_similarity")
"""Graders computed here, with no model call (a `multi` may combine only these)."""
KNOWN = ("string_check", "text_similarity", "score_model", "label_model", "multi", "python")
EMBEDDING_MODEL = "openai/text-embedding-3-large"
"""The model OpenAI's `cosine` metric embeds with."""


class GraderError(ValueError):
    """A grader that cannot run as written; the message says which key and what to write."""


def _path(name: str) -> list[str | int]:
    parts: list[str | int] = []
    for piece in name.split("."):
        head, *indexes = piece.split("[")
        if head:
            parts.append(head)
        parts.extend(int(i.rstrip("]")) for i in indexes if i.rstrip("]").isdigit())
    return parts


def lookup(namespace: Mapping[str, Any], name: str) -> Any:
    """`item.a.b` / `item.list[0]` in `namespace`; raises KeyError naming the reference when it is not there."""
    value: Any = namespace
    for part in _path(name):
        if isinstance(part, int) and isinstance(value, list) and -len(value) <= part < len(value):
            value = value[part]
        elif isinstance(part, str) and isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            raise KeyError(name)
    return value


def as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def fill(template: str, namespace: Mapping[str, Any], only: str | None = None) -> str:
    """`{{ns.path}}` filled from `namespace` (only the `only` namespace when given; the others are kept)."""

    def one(match: re.Match[str]) -> str:
        if only is not None and not match[1].startswith(f"{only}."):
            return match[0]
        return as_text(lookup(namespace, match[1]))

    return TEMPLATE.sub(one, template)


def fill_all(value: Any, namespace: Mapping[str, Any], only: str) -> Any:
    if isinstance(value, str):
        return fill(value, namespace, only)
    if isinstance(value, list):
        return [fill_all(v, namespace, only) for v in value]
    if isinstance(value, Mapping):
        return {k: fill_all(v, namespace, only) for k, v in value.items()}
    return value


def references(value: Any) -> list[str]:
    """Every `{{...}}` reference in a grader (its strings, nested)."""
    if isinstance(value, str):
        return TEMPLATE.findall(value)
    if isinstance(value, list):
        return [r for v in value for r in references(v)]
    if isinstance(value, Mapping):
        return [r for v in value.values() for r in references(v)]
    return []


def sample(reply: str) -> dict[str, Any]:
    """The `sample` namespace of a reply: its text, and the text read as JSON when it is JSON."""
    found: dict[str, Any] = {"output_text": reply}
    try:
        found["output_json"] = json.loads(reply)
    except ValueError:
        pass
    return found


# The text metrics: each is the maintained library's sentence-level score, in [0, 1]. ------------------------------


def _fuzzy(text: str, reference: str) -> float:
    from rapidfuzz import fuzz, utils

    return float(fuzz.WRatio(text, reference, processor=utils.default_process)) / 100.0


def _bleu(text: str, reference: str) -> float:
    import sacrebleu

    return float(sacrebleu.sentence_bleu(text, [reference]).score) / 100.0


def _gleu(text: str, reference: str) -> float:
    from nltk.translate.gleu_score import sentence_gleu  # type: ignore[import-untyped]

    return float(sentence_gleu([reference.split()], text.split()))


class _NoSynonyms:
    """A WordNet that knows no synonyms: METEOR's exact and stem stages only, when WordNet's data is absent."""

    def synsets(self, *args: object, **kwargs: object) -> list[Any]:
        return []


def _meteor(text: str, reference: str) -> float:
    from nltk.translate.meteor_score import meteor_score  # type: ignore[import-untyped]

    try:
        return float(meteor_score([reference.split()], text.split()))
    except LookupError:  # nltk's WordNet corpus is data fetched apart from the package
        return float(meteor_score([reference.split()], text.split(), wordnet=_NoSynonyms()))


def _rouge(kind: str) -> Callable[[str, str], float]:
    name = "rougeL" if kind == "l" else f"rouge{kind}"

    def score(text: str, reference: str) -> float:
        from rouge_score import rouge_scorer  # type: ignore[import-untyped]

        return float(rouge_scorer.RougeScorer([name]).score(reference, text)[name].fmeasure)

    return score


_LIBRARIES = {"bleu": "sacrebleu", "gleu": "nltk", "meteor": "nltk", "rouge": "rouge_score"}

SCORERS: dict[str, Callable[[str, str], float]] = {
    "fuzzy_match": _fuzzy,
    "bleu": _bleu,
    "gleu": _gleu,
    "meteor": _meteor,
    **{f"rouge_{n}": _rouge(n) for n in "12345l"},
}


def string_check(operation: str, text: str, reference: str) -> bool:
    """OpenAI's `string_check`: `eq` / `ne` exact, `like` contains, `ilike` contains ignoring case."""
    if operation == "eq":
        return text == reference
    if operation == "ne":
        return text != reference
    if operation == "like":
        return reference in text
    return reference.lower() in text.lower()


# multi: the formula, read with ast; numbers, grader names and arithmetic only. ------------------------------------

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
_FUNCTIONS: dict[str, Callable[..., float]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "floor": math.floor,
    "ceil": math.ceil,
    "exp": math.exp,
    "sqrt": math.sqrt,
    "log": math.log,
}


def parse_formula(formula: object, names: list[str]) -> ast.expr:
    """`calculate_output` as a checked expression; raises `GraderError` at anything but arithmetic over `names`."""
    if not isinstance(formula, str) or not formula.strip():
        raise GraderError("`calculate_output` must be a formula over the grader names, e.g. '0.5 * a + 0.5 * b'")
    try:
        tree = ast.parse(formula.strip().replace("^", "**"), mode="eval").body  # OpenAI writes a power as `^`
    except SyntaxError as exc:
        raise GraderError(f"`calculate_output` {formula!r} is not a formula ({exc.msg})") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in names and node.id not in _FUNCTIONS:
            raise GraderError(f"`calculate_output` names {node.id!r}, which is none of its graders ({names})")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS):
            raise GraderError(f"`calculate_output` may call only {', '.join(_FUNCTIONS)}")
        if isinstance(node, ast.Constant) and (isinstance(node.value, bool) or not isinstance(node.value, int | float)):
            raise GraderError(f"`calculate_output` may hold numbers only, not {node.value!r}")
        allowed = (ast.BinOp, ast.UnaryOp, ast.Call, ast.Name, ast.Constant, ast.Load, ast.operator, ast.unaryop)
        if not isinstance(node, allowed) or (isinstance(node, ast.operator) and type(node) not in _BINARY):
            raise GraderError(
                f"`calculate_output` {formula!r}: only numbers, grader names, + - * / ^ and "
                f"{', '.join(_FUNCTIONS)} are allowed (no {type(node).__name__})"
            )
        if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.USub | ast.UAdd):
            raise GraderError(f"`calculate_output` {formula!r}: only - and + go before a number")
    return tree


def evaluate(node: ast.expr, values: Mapping[str, float]) -> float:
    """A checked formula's value (`parse_formula` allows nothing else)."""
    if isinstance(node, ast.Constant):
        assert isinstance(node.value, int | float)
        return float(node.value)
    if isinstance(node, ast.Name):
        return values[node.id]
    if isinstance(node, ast.UnaryOp):
        inner = evaluate(node.operand, values)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](evaluate(node.left, values), evaluate(node.right, values))
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    return float(_FUNCTIONS[node.func.id](*(evaluate(a, values) for a in node.args)))


# Checks of a grader's definition, and its matcher. ----------------------------------------------------------------


def _need_text(grader: Mapping[str, Any], key: str) -> str:
    value = grader.get(key)
    if not isinstance(value, str):
        raise GraderError(f"`{key}` must be text (a template like '{{{{sample.output_text}}}}'), got {short(value)}")
    return value


def _threshold(grader: Mapping[str, Any], required: bool) -> float | None:
    value = grader.get("pass_threshold")
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise GraderError(f"`pass_threshold` must be a number, got {short(value)}")
    return float(value)


def check(grader: object) -> None:
    """Raises `GraderError` when `grader` cannot run as written (a `multi` may combine only `COMPUTED` graders)."""
    if not isinstance(grader, Mapping):
        raise GraderError(f"a grader is an object with `type:`, got {short(grader)}")
    kind = grader.get("type")
    if kind in ("string_check", "text_similarity"):
        _need_text(grader, "input")
        _need_text(grader, "reference")
    if kind == "string_check" and grader.get("operation") not in OPERATIONS:
        raise GraderError(f"`operation` {short(grader.get('operation'))} is none of {', '.join(OPERATIONS)}")
    if kind == "text_similarity":
        _check_similarity(grader)
    if kind in ("score_model", "label_model"):
        _check_model_grader(grader)
    if kind == "multi":
        _check_multi(grader)


def _check_similarity(grader: Mapping[str, Any]) -> None:
    if grader.get("evaluation_metric") == "cosine":
        raise GraderError(
            "the cosine metric compares embeddings: write {type: similar, value: REFERENCE, threshold: "
            f"PASS_THRESHOLD, provider: {EMBEDDING_MODEL}}}"
        )
    metric = grader.get("evaluation_metric")
    if metric not in METRICS:
        raise GraderError(f"`evaluation_metric` {short(metric)} is none of {', '.join(METRICS)}")
    library = _LIBRARIES.get(str(metric).split("_")[0])
    if library is not None and importlib.util.find_spec(library) is None:
        raise GraderError(f"the {metric} metric needs {library}: pip install 'niceeval[text-metrics]'")
    _threshold(grader, required=True)


def _check_multi(grader: Mapping[str, Any]) -> None:
    graders = grader.get("graders")
    if not isinstance(graders, Mapping) or not graders:
        raise GraderError("`graders` must map names to graders, e.g. {a: {type: string_check, ...}}")
    for name, inner in graders.items():
        inner_kind = inner.get("type") if isinstance(inner, Mapping) else None
        if inner_kind not in COMPUTED or inner.get("evaluation_metric") == "cosine":
            raise GraderError(
                f"graders.{name}: a multi is computed here from string_check and text_similarity graders "
                f"(not {inner_kind!r}, nor cosine); list that grader on its own in testing_criteria"
            )
        try:
            check(inner)
        except GraderError as exc:
            raise GraderError(f"graders.{name}: {exc}") from None
    parse_formula(grader.get("calculate_output"), [str(n) for n in graders])
    _threshold(grader, required=False)


def _check_model_grader(grader: Mapping[str, Any]) -> None:
    task_text(grader)
    if grader["type"] == "label_model":
        labels, passing = grader.get("labels"), grader.get("passing_labels")
        if not isinstance(labels, list) or not labels or not all(isinstance(label, str) for label in labels):
            raise GraderError(f"`labels` must be a list of labels, got {short(labels)}")
        if not isinstance(passing, list) or not passing or not set(passing) <= set(labels):
            raise GraderError(f"`passing_labels` must list some of the labels {labels}, got {short(passing)}")
        return
    low, high = score_range(grader)
    threshold = _threshold(grader, required=False)
    if threshold is not None and not low <= threshold <= high:
        raise GraderError(f"`pass_threshold` {threshold:g} lies outside the range {low:g}-{high:g}")


def score_range(grader: Mapping[str, Any]) -> tuple[float, float]:
    """A `score_model`'s `range` ([0, 1] when not given)."""
    given = grader.get("range", [0, 1])
    numbers = (
        isinstance(given, list)
        and len(given) == 2
        and all(isinstance(x, int | float) and not isinstance(x, bool) for x in given)
    )
    if not numbers or not given[0] < given[1]:
        raise GraderError(f"`range` must be [low, high] with low < high, got {short(given)}")
    return float(given[0]), float(given[1])


_OUTPUT_POINTER = "the output (given below as data in the output tags)"


def _content(content: Any) -> str:
    if isinstance(content, Mapping):  # {type: input_text, text: ...}
        return str(content.get("text", ""))
    if isinstance(content, list):
        return "\n".join(_content(part) for part in content)
    return str(content)


def message_text(message: object) -> tuple[str, str]:
    """A message of OpenAI's forms (`{role, content}`, `{type: message, role, content: {type, text}}`) as its
    role and text; raises `GraderError` for anything else."""
    if not isinstance(message, Mapping) or not isinstance(message.get("role"), str) or "content" not in message:
        raise GraderError(f"a message is {{role: ..., content: ...}}, got {short(message)}")
    return message["role"], _content(message["content"])


def task_text(grader: Mapping[str, Any]) -> str:
    """A model grader's messages as one grading task, `{{sample.*}}` pointing at the output shown as data."""
    messages = grader.get("input")
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    if not isinstance(messages, list) or not messages:
        raise GraderError("`input` must be the grader's messages: [{role: system, content: ...}, ...]")
    parts = [message_text(m) for m in messages]
    text = "\n\n".join(f"{role}: {content}" if len(parts) > 1 else content for role, content in parts)
    return TEMPLATE.sub(lambda m: _OUTPUT_POINTER if m[1].startswith("sample.") else m[0], text)


def _score(grader: Mapping[str, Any], values: Mapping[str, Any]) -> tuple[float, str]:
    """A computed grader's score on one sample, with what it compared."""
    text, reference = fill(grader["input"], values), fill(grader["reference"], values)
    if grader["type"] == "string_check":
        ok = string_check(grader["operation"], text, reference)
        return float(ok), f"{short(text)} {grader['operation']} {short(reference)}: {'yes' if ok else 'no'}"
    metric = grader["evaluation_metric"]
    score = SCORERS[metric](text, reference)
    return score, f"{metric} {score:.3f} against {short(reference)}"


def matcher(grader: Mapping[str, Any]) -> Matcher:
    """The check of a computed grader (`string_check`, `text_similarity` but cosine, `multi` of them) on a reply,
    with OpenAI's pass rule: a string check passes when true, a similarity when its score reaches
    `pass_threshold`, a multi when its formula does (no `pass_threshold`: a score, always passing)."""
    check(grader)
    kind = grader["type"]
    threshold = _threshold(grader, required=kind == "text_similarity")
    formula = parse_formula(grader["calculate_output"], list(grader["graders"])) if kind == "multi" else None

    def score(reply: Any) -> ScoreLike:
        values = {"sample": sample(reply if isinstance(reply, str) else as_text(reply))}
        try:
            if formula is None:
                result, why = _score(grader, values)
            else:
                parts = {name: _score(inner, values)[0] for name, inner in grader["graders"].items()}
                result = evaluate(formula, parts)
                shown = ", ".join(f"{name} {value:.3f}" for name, value in parts.items())
                why = f"{grader['calculate_output']} = {result:.3f} ({shown})"
        except KeyError as exc:
            return Verdict(False, f"the sample has no {exc.args[0]} (is the reply JSON?)", actual=short(reply))
        except (ArithmeticError, ValueError) as exc:
            return Verdict(False, f"the formula cannot be computed: {exc}", actual=short(reply))
        if kind == "string_check":
            return Verdict(result, why, actual=short(reply), passed=result == 1.0)
        passed = True if threshold is None else result >= threshold
        bounded = min(max(result, 0.0), 1.0)
        limit = "" if threshold is None else f"; passes at {threshold:g}"
        return Verdict(bounded, why + limit, actual=short(reply), passed=passed)

    expected = f"{kind} {grader.get('operation') or grader.get('evaluation_metric') or grader.get('calculate_output')}"
    cut = 1.0 if kind == "string_check" else threshold or 0.0
    return Matcher(name=str(grader.get("name") or kind), score_fn=score, expected=expected, threshold=cut)
