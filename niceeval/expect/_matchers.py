"""The built-in value matchers. Each checks its own arguments at once, so a typo fails where it was written."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Awaitable, Callable
from functools import lru_cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

from niceeval._core.assertion import SOFT_DEFAULT_THRESHOLD, Matcher, ScoreLike, Severity, Verdict
from niceeval._core.errors import UsageError
from niceeval._core.values import describe_difference, short, tail

Needle = str | re.Pattern[str]


def _needle(fn: str, item: object) -> Needle:
    if isinstance(item, str | re.Pattern):
        return item
    raise UsageError(
        f"{fn}() takes a string or a compiled regex (re.compile(...)), got {type(item).__name__} {short(item)}."
    )


def _render(needle: Needle) -> str:
    return f"/{needle.pattern}/" if isinstance(needle, re.Pattern) else repr(needle)


def _contains(value: object, needle: Needle, case_sensitive: bool = True) -> bool | None:
    """Whether `value` contains `needle`; None when the value is neither a string nor a collection."""
    if not case_sensitive:
        needle = re.compile(needle.pattern, needle.flags | re.IGNORECASE) if isinstance(needle, re.Pattern) else needle
    if isinstance(value, str):
        if isinstance(needle, re.Pattern):
            return needle.search(value) is not None
        return needle in value if case_sensitive else needle.casefold() in value.casefold()
    if isinstance(value, list | tuple | set | frozenset):
        if isinstance(needle, re.Pattern):
            return any(isinstance(v, str) and needle.search(v) is not None for v in value)
        if not case_sensitive:
            return any(isinstance(v, str) and v.casefold() == needle.casefold() for v in value)
        return needle in value
    return None


def includes(item: Needle, *, case_sensitive: bool = True) -> Matcher:
    """Pass when a string contains `item` (a substring or a compiled regex), or a list contains it.

    Args:
        item: The substring, or a pattern from `re.compile(...)`, searched anywhere in the value.
        case_sensitive: False to ignore case (`includes("refund", case_sensitive=False)` finds "Refund").
    """
    needle = _needle("includes", item)
    shown = _render(needle) + ("" if case_sensitive else ", case_sensitive=False")
    expected = f"includes {shown}"

    def score(value: Any) -> ScoreLike:
        found = _contains(value, needle, case_sensitive)
        if found is None:
            return Verdict(False, f"expected a string or a list, got {type(value).__name__}", actual=short(value))
        if found:
            return True
        return Verdict(False, f"{_render(needle)} not found", actual=short(value))

    return Matcher(name=f"includes({shown})", score_fn=score, expected=expected)


def excludes(item: Needle) -> Matcher:
    """Pass when a string does not contain `item` (substring or compiled regex), or a list does not hold it."""
    needle = _needle("excludes", item)
    expected = f"excludes {_render(needle)}"

    def score(value: Any) -> ScoreLike:
        found = _contains(value, needle)
        if found is None:
            return Verdict(False, f"expected a string or a list, got {type(value).__name__}", actual=short(value))
        if not found:
            return True
        return Verdict(False, f"{_render(needle)} was found", actual=short(value))

    return Matcher(name=f"excludes({_render(needle)})", score_fn=score, expected=expected)


def equals(expected: object) -> Matcher:
    """Pass when the value deeply equals `expected`; a miss lists each difference by path.

    A pydantic model compared with a plain dict or list is compared by its `model_dump()`.
    """

    def score(value: Any) -> ScoreLike:
        differences = describe_difference(expected, value)
        if not differences:
            return True
        return Verdict(False, "\n".join(differences), actual=short(value))

    return Matcher(name="equals", score_fn=score, expected=short(expected))


@lru_cache(maxsize=256)
def _adapter(schema: Any) -> TypeAdapter[Any]:
    return TypeAdapter(schema)


def _schema_name(schema: object) -> str:
    if isinstance(schema, dict):
        return str(schema.get("title", "JSON Schema"))
    return getattr(schema, "__name__", None) or repr(schema)


def _json_schema_validator(schema: dict[str, Any]) -> Callable[[Any], list[str]]:
    import jsonschema

    try:
        validator_cls = jsonschema.validators.validator_for(schema)
        validator_cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise UsageError(f"matches() was given an invalid JSON Schema: {exc.message}") from None
    validator = validator_cls(schema)

    def errors(value: Any) -> list[str]:
        found = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        return [f"{'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in found]

    return errors


def _type_validator(schema: Any) -> Callable[[Any], list[str]]:
    try:
        try:
            adapter = _adapter(schema)
        except TypeError:  # unhashable but valid annotations (rare) skip the cache
            adapter = TypeAdapter(schema)
    except Exception as exc:
        raise UsageError(
            f"matches() takes a pydantic model class, a type pydantic understands (list[int], TypedDict, ...) "
            f"or a JSON Schema dict; {short(schema)} is none of these ({type(exc).__name__})."
        ) from None

    def errors(value: Any) -> list[str]:
        try:
            adapter.validate_python(value)
        except ValidationError as exc:
            return [f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors()]
        return []

    return errors


def matches(schema: type[Any] | dict[str, Any] | Any) -> Matcher:
    """Pass when the value validates against `schema`; a miss lists the validation errors.

    Args:
        schema: A pydantic model class, any type a pydantic `TypeAdapter` accepts, or a JSON Schema dict
            (checked with jsonschema). A JSON string value is parsed before validation.
    """
    validate = _json_schema_validator(schema) if isinstance(schema, dict) else _type_validator(schema)
    name = _schema_name(schema)

    def score(value: Any) -> ScoreLike:
        if isinstance(value, str | bytes):
            try:
                value = json.loads(value)
            except ValueError:
                if isinstance(schema, dict):
                    return Verdict(False, "the value is a string but not valid JSON", actual=short(value))
        problems = validate(value)
        if not problems:
            return True
        return Verdict(False, "\n".join(problems[:20]), actual=short(value))

    return Matcher(name=f"matches({name})", score_fn=score, expected=f"a valid {name}")


def satisfies(predicate: Callable[[Any], bool | Awaitable[bool]], label: str) -> Matcher:
    """Pass when `predicate(value)` is true. `label` names the check in reports.

    Args:
        predicate: A function (sync or async) of the value returning a bool.
        label: What the predicate means, in words: "total is positive".
    """
    if not callable(predicate):
        raise UsageError(f"satisfies() needs a function as its first argument, got {short(predicate)}.")
    if not isinstance(label, str) or not label.strip():
        raise UsageError('satisfies() needs a label that says what it checks, e.g. satisfies(fn, "total > 0").')

    def verdict(value: Any, held: object) -> ScoreLike:
        if isinstance(held, Verdict | float | int) and not isinstance(held, bool):
            return held  # a score or a Verdict of the predicate's own
        if held:
            return True
        return Verdict(False, f"{label}: false for {short(value)}", actual=short(value))

    def score(value: Any) -> ScoreLike | Awaitable[ScoreLike]:
        held = predicate(value)
        if inspect.isawaitable(held):

            async def later() -> ScoreLike:
                return verdict(value, await held)

            return later()
        return verdict(value, held)

    return Matcher(name=label, score_fn=score, expected=label)


def make_assertion(
    *,
    name: str,
    score: Callable[[Any], ScoreLike | Awaitable[ScoreLike]],
    severity: Severity = "gate",
    threshold: float | None = None,
) -> Matcher:
    """Wrap any scoring function into a matcher that chains like the built-in ones.

    Args:
        name: Shown in reports.
        score: `value -> bool | float in [0, 1] | Verdict`, sync or async.
        severity: `gate` (default) or `soft`.
        threshold: Minimum passing score; 1.0 for a gate and 0.8 for a soft one when not given.
    """
    if not isinstance(name, str) or not name.strip():
        raise UsageError("make_assertion() needs name=, a non-empty string shown in reports.")
    if not callable(score):
        raise UsageError(f"make_assertion(name={name!r}) needs score=, a function of the value.")
    if severity not in ("gate", "soft"):
        raise UsageError(f"make_assertion(name={name!r}) severity must be 'gate' or 'soft', got {severity!r}.")
    matcher = Matcher(name=name, score_fn=score, severity=severity)
    if threshold is not None:
        return matcher.at_least(threshold) if severity == "soft" else matcher.at_least(threshold).gate()
    return matcher.at_least(SOFT_DEFAULT_THRESHOLD) if severity == "soft" else matcher


def command_succeeded() -> Matcher:
    """Pass when a sandbox command result exited 0 (within its timeout); a miss shows the exit and stderr tail."""

    def score(value: Any) -> ScoreLike:
        exit_code = getattr(value, "exit_code", "missing")
        if exit_code == "missing":
            return Verdict(False, f"expected a command result (from t.sandbox.run_command), got {short(value)}")
        if exit_code == 0 and not getattr(value, "timed_out", False):
            return True
        stderr = tail(str(getattr(value, "stderr", "")), 600)
        what = "timed out" if getattr(value, "timed_out", False) else f"exited {exit_code}"
        return Verdict(False, f"{getattr(value, 'command', 'the command')} {what}\n{stderr}".rstrip(), actual=what)

    return Matcher(name="command_succeeded", score_fn=score, expected="exit code 0")
