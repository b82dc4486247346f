"""The trace of one eval run as a server-rendered SVG waterfall, lined up with the conversation's rounds.

One row per span, indented under its parent, a bar from its start to its end; each round (each turn's own parent
span, which niceeval made) starts with a heading row carrying its own time axis, so the waterfall reads in the
order of the conversation above it. Bars are coloured by what the span does (its semantic attributes: model, tool,
agent, chain) through CSS classes, a failed span is marked; every name is escaped (spans come from the agent),
and the markup needs no script, so the page's Content-Security-Policy stays as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from niceeval._core.spans import Span, SpanRecord, link
from niceeval.tracing import role

MAX_ROWS = 400
"""Rows drawn at most (a run with more spans shows the first ones and says how many were left out)."""
_WIDTH = 960
_LABEL = 300
_ROW = 18
_TOP = 24
_INDENT = 12
_LABEL_CHARS = 40
"""Label characters that fit the label column at depth 0 (monospace, 11 px); deeper rows fit fewer."""


@dataclass(frozen=True, slots=True)
class _Row:
    depth: int
    span: Span | None
    """None: the heading of a round."""
    window: tuple[int, int]
    """The round's first start and last end (ns): each round has its own time scale, so the gaps between turns
    (the eval's own work) do not squash the agent's spans into slivers."""
    heading: str = ""


def waterfall(records: Sequence[SpanRecord]) -> Markup | None:
    """The run's spans as an SVG waterfall, or None when the run has none."""
    if not records:
        return None
    spans = link(record.span() for record in records)
    rows = _rows(spans)
    shown = rows[:MAX_ROWS]
    height = _TOP + _ROW * len(shown) + (_ROW if len(rows) > len(shown) else 0) + 6
    parts = [
        f'<svg class="chart waterfall" viewBox="0 0 {_WIDTH} {height}" role="img" '
        f'aria-label="Trace: {len(spans)} spans" xmlns="http://www.w3.org/2000/svg">',
        _grid(height),
    ]
    if not rows[0].heading:
        parts.append(_ticks(rows[0].window, 14))
    for number, row in enumerate(shown):
        y = _TOP + number * _ROW
        if row.span is None:
            parts.append(f'<text class="round" x="4" y="{y + 13}">{escape(row.heading)}</text>')
            parts.append(_ticks(row.window, y + 13))
            continue
        low, high = row.window
        scale = (_WIDTH - _LABEL - 16) / max(high - low, 1)
        parts.append(_bar(row.span, row.depth, y, (row.span.start_ns - low) * scale, row.span.duration * 1e9 * scale))
    if len(rows) > len(shown):
        y = _TOP + len(shown) * _ROW
        parts.append(f'<text class="axis" x="4" y="{y + 13}">... {len(rows) - len(shown)} more rows not drawn</text>')
    return Markup("".join(parts) + "</svg>")


def _rows(spans: Sequence[Span]) -> list[_Row]:
    """A row per span in tree order, with a heading per round when there are several."""
    rounds: dict[str | None, list[Span]] = {}
    for span in spans:
        if span.parent is None:
            rounds.setdefault(span.parent_id, []).append(span)
    rows: list[_Row] = []
    for number, tops in enumerate(rounds.values(), start=1):
        members = [member for top in tops for member in (top, *top.descendants())]
        window = (min(m.start_ns for m in members), max(max(m.end_ns, m.start_ns) for m in members))
        if len(rounds) > 1:
            rows.append(_Row(0, None, window, f"round {number}"))
        rows += [_Row(depth, span, window) for top in tops for depth, span in _subtree(top, 0)]
    return rows


def _subtree(span: Span, depth: int) -> list[tuple[int, Span]]:
    rows: list[tuple[int, Span]] = [(depth, span)]
    for child in span.children:
        rows += _subtree(child, depth + 1)
    return rows


def _bar(span: Span, depth: int, y: int, x: float, width: float) -> str:
    kind = role(span)
    state = " failed" if span.failed else ""
    room = _LABEL_CHARS - depth * 2
    label = span.name if len(span.name) <= room else span.name[: room - 1] + "…"
    tip = f"{span.name} · {kind} · {span.duration * 1000:.1f} ms" + (
        f" · ERROR {span.status_message}" if span.failed else ""
    )
    bar_x = _LABEL + x
    return (
        f'<g class="span {kind}{state}"><title>{escape(tip)}</title>'
        f'<text class="row-label" x="{4 + depth * _INDENT}" y="{y + 13}">{escape(label)}</text>'
        f'<rect class="bar" x="{bar_x:.1f}" y="{y + 3}" width="{max(width, 1.5):.1f}" height="{_ROW - 6}" rx="2"/>'
        "</g>"
    )


def _grid(height: int) -> str:
    return "".join(
        f'<line class="grid" x1="{x:.1f}" y1="{_TOP - 4}" x2="{x:.1f}" y2="{height - 4}"/>' for x in _tick_xs()
    )


def _ticks(window: tuple[int, int], y: int) -> str:
    total = window[1] - window[0]
    return "".join(
        f'<text class="axis" x="{x:.1f}" y="{y}" text-anchor="{"end" if step == 4 else "middle"}">'
        f"{_ms(total / 1e6 * step / 4)}</text>"
        for step, x in enumerate(_tick_xs())
    )


def _tick_xs() -> list[float]:
    return [_LABEL + (_WIDTH - _LABEL - 16) * step / 4 for step in range(5)]


def _ms(value: float) -> str:
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    return f"{value:.0f} ms" if value >= 10 or value == 0 else f"{value:.2f} ms"
