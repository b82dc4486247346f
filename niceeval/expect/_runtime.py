"""The matchers package's one door for the eval layer (`niceeval._eval`, `niceeval._run`): what checking an eval
needs beyond the public names of `niceeval.expect`.

- `as_pattern`: a step of `t.tool_order(...)` / `t.event_order(...)`, given as a name or a pattern, checked.
- `edit_distance`: the edits between two texts, behind the declared `levenshtein` assertions of a dataset. It
  loads rapidfuzz, so it loads on first use (planning imports it before the suite's loop when a dataset needs it).

Neither is an eval author's business, so they are not public; no other private module of the package is imported
from outside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from niceeval._core.lazy import lazy_getattr
from niceeval.expect._patterns import as_pattern

if TYPE_CHECKING:
    from niceeval.expect._fuzzy import edit_distance

__all__ = ["as_pattern", "edit_distance"]

__getattr__ = lazy_getattr(__name__, {"edit_distance": "niceeval.expect._fuzzy"})
