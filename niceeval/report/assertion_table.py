"""One run explained in plain text: the assertion table pytest shows as an eval's failure, and CI logs reuse."""

from __future__ import annotations

from niceeval._core.assertion import AssertionResult
from niceeval._core.results import RunResult
from niceeval._core.text import clean, clean_lines

_MARK = {"passed": "✓", "failed": "✗", "inconclusive": "?"}


def _score(a: AssertionResult) -> str:
    score = "n/a" if a.score is None else f"{a.score:.2f}"
    return f"{score}/{a.threshold:.2f}"


def _details(a: AssertionResult, indent: str) -> list[str]:
    lines = []
    if a.expected is not None:
        lines.append(f"{indent}expected: {clean(a.expected)}")
    if a.actual is not None:
        lines.append(f"{indent}actual:   {clean(a.actual)}")
    if a.reason:
        lines.append(f"{indent}reason:   {clean_lines(a.reason, indent + '          ', 1200)}")
    return lines


def assertion_table(result: RunResult) -> str:
    """Every assertion of `result` as one row (state, severity, score/threshold, name, where), misses explained.

    Untrusted text (model output in `actual` and `reason`) has its control characters escaped and is bounded.
    """
    head = f"eval {clean(result.eval_id, 300)}: {result.outcome} ({result.duration_s:.2f} s)"
    lines = [head]
    if result.error is not None:
        where = f"  at {result.error.location}" if result.error.location else ""
        lines.append(f"  error {clean(result.error.type)}: {clean_lines(result.error.message, '    ', 2000)}{where}")
    if result.skip_reason:
        lines.append(f"  skipped: {clean(result.skip_reason)}")
    if not result.assertions:
        lines.append("  (no assertions recorded)")
        return "\n".join(lines)
    width = min(max(len(clean(a.name, 80)) for a in result.assertions), 80)
    for a in result.assertions:
        mark = _MARK[a.state]
        cause = f" [{a.cause}]" if a.state == "inconclusive" and a.cause else ""
        where = f"  {a.location}" if a.location else ""
        lines.append(f"  {mark} {a.severity:<4} {_score(a):>9}  {clean(a.name, 80):<{width}}{cause}{where}".rstrip())
        if a.state != "passed":
            lines.extend(_details(a, "        "))
    return "\n".join(lines)
