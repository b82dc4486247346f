"""`all_of`, `any_of`, `not_`: matchers built from matchers. Reports show the tree, each child with its verdict.

A combinator passes by its children's verdicts (all pass / one passes / the child misses); its score is the
min / max / 1 - x of theirs, so `.at_least(x)` on a combinator cuts that score instead. An inconclusive child
leaves the combinator inconclusive when the others cannot decide it; a child whose score function raises fails
the whole combinator, naming the line (a `not_` over a crash must never pass).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from niceeval._core.assertion import AssertionResult, Inconclusive, Matcher, ScoreLike, Verdict
from niceeval._core.errors import UsageError, caller_location
from niceeval._core.values import short

Fold = Callable[[list[AssertionResult], Any], ScoreLike]


def _children(fn: str, given: Sequence[object], *, at_least: int) -> tuple[Matcher, ...]:
    if len(given) == 1 and isinstance(given[0], list | tuple):
        given = tuple(given[0])
    for position, child in enumerate(given, start=1):
        if not isinstance(child, Matcher):
            raise UsageError(
                f"{fn}() at {caller_location(0)}: argument {position} is {short(child)}, not a matcher. "
                f"Pass matchers from niceeval.expect, e.g. {fn}(includes('refund'), includes('order'))."
            )
    if len(given) < at_least:
        raise UsageError(f"{fn}() at {caller_location(0)} needs at least {at_least} matcher(s), got {len(given)}.")
    return tuple(given)  # type: ignore[arg-type]


def _settle(children: Sequence[Matcher], value: Any) -> list[AssertionResult] | Awaitable[list[AssertionResult]]:
    """Each child's result over `value`; awaitable when some child's score function is async."""
    raws: list[object] = []
    for child in children:
        try:
            raws.append(child.score_fn(value))
        except Exception as exc:
            raws.append(exc)
    if not any(inspect.isawaitable(raw) for raw in raws):
        return [_result(child, raw) for child, raw in zip(children, raws, strict=True)]

    async def later() -> list[AssertionResult]:
        results = []
        for child, raw in zip(children, raws, strict=True):
            if inspect.isawaitable(raw):
                try:
                    raw = await raw
                except Exception as exc:
                    raw = exc
            results.append(_result(child, raw))
        return results

    return later()


def _result(child: Matcher, raw: object) -> AssertionResult:
    if isinstance(raw, BaseException):
        return child.crashed(raw, None)
    return child.result(raw, None)  # type: ignore[arg-type]


def _mark(result: AssertionResult) -> str:
    return {"passed": "✓", "failed": "✗", "inconclusive": "?"}[result.state]


def tree(results: Sequence[AssertionResult]) -> str:
    """The children as an indented list: mark, name, score, and the reason of a miss (nested trees indented)."""
    lines = []
    for r in results:
        score = "no score" if r.score is None else f"{r.score:.2f}"
        lines.append(f"{_mark(r)} {r.name} ({score})")
        if r.state != "passed" and r.reason:
            lines.extend("    " + line for line in r.reason.splitlines())
    return "\n".join(lines)


def _combine(name: str, expected: str, children: tuple[Matcher, ...], fold: Fold) -> Matcher:
    def score(value: Any) -> ScoreLike | Awaitable[ScoreLike]:
        settled = _settle(children, value)
        if isinstance(settled, list):
            return fold(settled, value)

        async def later() -> ScoreLike:
            return fold(await settled, value)

        return later()

    return Matcher(name=name, score_fn=score, expected=expected)


def _crash(results: Sequence[AssertionResult]) -> AssertionResult | None:
    return next((r for r in results if r.cause == "error"), None)


def _undecided(results: Sequence[AssertionResult], fn: str) -> Inconclusive:
    first = next(r for r in results if r.state == "inconclusive")
    return Inconclusive(first.cause or "error", f"{fn}: {first.name} is inconclusive ({first.reason})\n{tree(results)}")


def _names(children: Sequence[Matcher]) -> str:
    return ", ".join(child.name for child in children)


def all_of(*matchers: Matcher) -> Matcher:
    """Pass when every matcher passes; the score is the lowest of theirs.

    Args:
        matchers: Two or more matchers (or one list of them), each applied to the same value.
    """
    children = _children("all_of", matchers, at_least=1)

    def fold(results: list[AssertionResult], value: Any) -> ScoreLike:
        crashed = _crash(results)
        missed = [r for r in results if r.state == "failed"]
        if not missed and any(r.state == "inconclusive" for r in results):
            raise _undecided(results, "all_of")
        scores = [r.score for r in results if r.score is not None]
        passed = crashed is None and not missed
        head = "every matcher passed" if passed else f"{len(missed)} of {len(results)} missed"
        return Verdict(min(scores, default=0.0), f"{head}\n{tree(results)}", actual=short(value), passed=passed)

    return _combine(f"all_of({_names(children)})", " and ".join(c.expected or c.name for c in children), children, fold)


def any_of(*matchers: Matcher) -> Matcher:
    """Pass when at least one matcher passes; the score is the highest of theirs.

    Args:
        matchers: Two or more matchers (or one list of them), each applied to the same value.
    """
    children = _children("any_of", matchers, at_least=1)

    def fold(results: list[AssertionResult], value: Any) -> ScoreLike:
        crashed = _crash(results)
        hit = [r for r in results if r.state == "passed"]
        if crashed is None and not hit and any(r.state == "inconclusive" for r in results):
            raise _undecided(results, "any_of")
        scores = [r.score for r in results if r.score is not None]
        passed = crashed is None and bool(hit)
        head = f"{hit[0].name} passed" if passed else "a matcher crashed" if crashed else "no matcher passed"
        return Verdict(max(scores, default=0.0), f"{head}\n{tree(results)}", actual=short(value), passed=passed)

    return _combine(f"any_of({_names(children)})", " or ".join(c.expected or c.name for c in children), children, fold)


def not_(matcher: Matcher) -> Matcher:
    """Pass when `matcher` misses; the score is 1 - its score. A matcher that crashes or is inconclusive never
    makes `not_` pass.

    Args:
        matcher: The matcher to negate: `not_(includes("sorry"))`.
    """
    (child,) = _children("not_", (matcher,), at_least=1)

    def fold(results: list[AssertionResult], value: Any) -> ScoreLike:
        (result,) = results
        if result.state == "inconclusive":
            raise _undecided(results, "not_")
        crashed = result.cause == "error"
        passed = result.state == "failed" and not crashed
        head = f"{result.name} missed, as wanted" if passed else f"{result.name} {'crashed' if crashed else 'passed'}"
        score = 0.0 if crashed or result.score is None else 1.0 - result.score
        return Verdict(score, f"{head}\n{tree(results)}", actual=short(value), passed=passed)

    return _combine(f"not_({child.name})", f"not ({child.expected or child.name})", (child,), fold)
