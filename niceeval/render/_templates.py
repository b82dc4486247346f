"""The template environment and display filters the viewer's pages and the HTML report render with.

Each room keeps its own pages in its `templates/` folder (`niceeval/web/templates`, `niceeval/report/templates`);
the parts both show (a run in full, verdicts, judge counts, the variants table) are in this package's
`templates/`, and the stylesheet and icon both use in its `static/`. A room's page may not share a name with a
shared template: the room's folder is searched first, and a shadowed part would silently differ between the two.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape
from pydantic_core import to_jsonable_python

from niceeval._core.assertion import AssertionResult
from niceeval._core.wording import judge_calls, plural, share, share_range, usd
from niceeval.render._diffview import OPEN_UP_TO, diff_files

STATIC_DIR = Path(__file__).resolve().parent / "static"
TEXT_LIMIT = 100_000
"""Characters of one text (a reply, a tool's output, a prompt) shown before the rest is cut with a note: a 10 MB
reply would make a page or a report file too heavy to open. The results store and the JSON report keep it all."""


def environment(room: str, functions: Mapping[str, Any] | None = None) -> jinja2.Environment:
    """The template environment of `room`'s pages: every `{{ }}` is HTML-escaped, an unknown name is an error.

    Each call builds a new environment (and compiles templates anew): a room builds its own once and keeps it.

    Args:
        room: The package whose `templates/` folder holds the room's pages (`"niceeval.web"`); the shared
            parts are found after them.
        functions: What the room's own pages call besides the shared filters and functions (the viewer's charts).
    """
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(
            [jinja2.PackageLoader(room, "templates"), jinja2.PackageLoader("niceeval.render", "templates")]
        ),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(pct=pct, duration=duration, usd=usd, when=when, score=score, pretty=pretty, clip=clip)
    env.filters.update(pct_range=pct_range)
    env.filters.update(plural=plural, judge_calls=judge_calls, decided_by=decided_by)
    env.tests.update(kept=kept)
    env.globals.update(TEXT_LIMIT=TEXT_LIMIT, diff_files=diff_files, DIFF_OPEN_UP_TO=OPEN_UP_TO, **(functions or {}))
    return env


def pct(value: float | None) -> str:
    """`0.833` -> `83%`, with the decimals it takes near 0 and 1 (`0.996` -> `99.6%`); `None` -> an en dash."""
    return "\u2013" if value is None else share(value)


def pct_range(low: float | None, high: float | None, between: str = "-") -> str:
    """An interval's bounds at one precision: `99.3%-99.9%`; an en dash when either is missing."""
    return "\u2013" if low is None or high is None else share_range(low, high, between)


def score(value: float | None) -> str:
    """A score to two decimals; `None` (inconclusive) -> an en dash."""
    return "\u2013" if value is None else f"{value:.2f}"


def duration(seconds: float | None) -> str:
    """Seconds as people read them: `420 ms`, `3.2 s`, `4 m 05 s`, `1 h 02 m`."""
    if seconds is None:
        return "\u2013"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} m {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} m"


def decided_by(assertion: AssertionResult) -> str:
    """An assertion's score beside what decided it: `score 0.62 / threshold 0.70`.

    A judge with a pass flag and no threshold (`.at_least()` not called) is recorded with threshold 0, which would
    read as "anything passes"; its pass flag decided, so that is what is shown: `score 0.90 · judge said pass (no
    threshold)`; sampled (`samples=K`), how many samples said pass. With both, both held: `score 0.80 / threshold
    0.70 · judge said pass`.
    """
    flags = [call.passed for call in assertion.judge_calls if call.passed is not None and call.score is not None]
    said = f"judge said {'pass' if flags[0] else 'fail'}" if len(flags) == 1 else None
    if len(flags) > 1 and assertion.threshold == 0:  # a sampled rubric (votes always have a threshold)
        said = f"{sum(flags)} of {len(flags)} samples said pass"
    if said and assertion.threshold == 0:
        return f"score {score(assertion.score)} · {said} (no threshold)"
    shown = f"score {score(assertion.score)} / threshold {score(assertion.threshold)}"
    return f"{shown} · {said}" if said else shown


def when(moment: datetime | None) -> str:
    """A timestamp in UTC, to the minute."""
    if moment is None:
        return "\u2013"
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M")


def kept(value: Any) -> bool:
    """Whether the results store keeps a value (a message's data): not None, nor a NaN or an infinity on its own,
    which the store writes as null. A run's page shows a data block for a kept value only, live as from the store."""
    return value is not None and not (isinstance(value, float) and not math.isfinite(value))


def pretty(value: Any) -> str:
    """A message's data or a tool's input or output as readable text, in the form the results store keeps it (a
    value as pydantic writes it to JSON, as the store's events and the JSON report hold it: a model or dataclass as
    its fields, a date in ISO 8601, NaN as null, an object JSON cannot hold as its repr): a string as it is,
    anything else as indented JSON. A run rendered as it finishes (`run --html`) and the same run read back from
    the store (`report --html`, the viewer) then show the same text."""
    try:
        value = to_jsonable_python(value, inf_nan_mode="null", fallback=repr)
    except ValueError:  # a value that contains itself, bytes that are not UTF-8
        return repr(value)
    if value is None:
        return "\u2013"
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False)


def clip(text: Any, limit: int = TEXT_LIMIT) -> Markup:
    """`text` escaped, cut after `limit` characters with a note saying how many were left out."""
    value = text if isinstance(text, str) else str(text)
    if len(value) <= limit:
        return escape(value)
    left_out = len(value) - limit
    return escape(value[:limit]) + Markup(f'<span class="clipped">… {left_out:,} more characters not shown</span>')
