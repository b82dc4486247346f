"""Value matchers for `t.check(value, matcher)` and `t.require(value, matcher)`.

Matchers are immutable: `.gate()`, `.at_least(x)`, `.label(text)` and `.optional()` return new ones.
"""

from niceeval._core.assertion import AssertionResult, Matcher, Verdict
from niceeval.expect._matchers import (
    command_succeeded,
    equals,
    excludes,
    includes,
    make_assertion,
    matches,
    satisfies,
    similarity,
)

__all__ = [
    "AssertionResult",
    "Matcher",
    "Verdict",
    "command_succeeded",
    "equals",
    "excludes",
    "includes",
    "make_assertion",
    "matches",
    "satisfies",
    "similarity",
]
