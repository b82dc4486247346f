"""Value matchers for `t.check(value, matcher)` and `t.require(value, matcher)`.

Matchers are immutable: `.gate()`, `.at_least(x)`, `.label(text)` and `.optional()` return new ones.
`all_of`, `any_of` and `not_` build matchers from matchers; `tool(...)` and `event(...)` are steps of
`t.tool_order` / `t.event_order`.

`similarity` and `levenshtein` load on first use (with rapidfuzz, the slowest of the matchers' libraries to import):
`from niceeval.expect import similarity` in an eval file loads them while discovery imports the file.

Design: docs/design/assertions.md
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from niceeval._core.assertion import AssertionResult, Matcher, Verdict
from niceeval._core.lazy import lazy_getattr
from niceeval.expect._algebra import all_of, any_of, not_
from niceeval.expect._matchers import (
    command_succeeded,
    equals,
    excludes,
    includes,
    make_assertion,
    matches,
    satisfies,
)
from niceeval.expect._patterns import EventPattern, ToolPattern, event, tool
from niceeval.expect._text import (
    ends_with,
    has_sections,
    includes_all,
    includes_any,
    includes_url,
    starts_with,
)
from niceeval.expect._values import (
    in_order,
    is_at_least,
    is_at_most,
    is_close_to,
    is_false,
    is_greater_than,
    is_less_than,
    is_not_none,
    is_true,
    json_includes,
)

if TYPE_CHECKING:
    from niceeval.expect._fuzzy import levenshtein, similarity

__all__ = [
    "AssertionResult",
    "EventPattern",
    "Matcher",
    "ToolPattern",
    "Verdict",
    "all_of",
    "any_of",
    "command_succeeded",
    "ends_with",
    "equals",
    "event",
    "excludes",
    "has_sections",
    "in_order",
    "includes",
    "includes_all",
    "includes_any",
    "includes_url",
    "is_at_least",
    "is_at_most",
    "is_close_to",
    "is_false",
    "is_greater_than",
    "is_less_than",
    "is_not_none",
    "is_true",
    "json_includes",
    "levenshtein",
    "make_assertion",
    "matches",
    "not_",
    "satisfies",
    "similarity",
    "starts_with",
    "tool",
]

__getattr__ = lazy_getattr(__name__, {"levenshtein": "niceeval.expect._fuzzy", "similarity": "niceeval.expect._fuzzy"})
