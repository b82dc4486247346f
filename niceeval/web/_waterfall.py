"""The trace of one eval run as a server-rendered SVG waterfall, lined up with the conversation's rounds.

One row per span, indented under its parent, a bar from its start to its end on a shared time axis; each round
(each turn's own parent span, which niceeval made) starts with a heading row, so the waterfall reads in the order
of the conversation above it. Bars are coloured by what the span does (its semantic attributes: model, tool,
agent, chain) through CSS classes, a failed span is marked; every name is escaped (spans come from the agent),
and the markup needs no script, so the page's Content-Security-Policy stays as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

from niceeval._core.spans import Span, SpanRecord, link
from niceeval.tracing._mapping import role

MAX_ROWS = 400
"""Rows drawn at most (a run with more spans shows the first ones and says how many were left out)."""
_WIDTH = 960
_LABEL = 300
_ROW = 18
_TOP = 24
_INDENT = 12
_LABEL_CHARS = 40
"""Label characters that fit the label column at depth 0 (monospace, 11 px); deeper rows fit fewer."""


def waterfall(records: Sequence[SpanRecord]) -> Markup | None:
    """The run's spans as an SVG waterfall, or None when the run has none."""
    if not records:
        return None
    spans = link(record.span() for record in records)
    rows = _rows(spans)
    shown = rows[:MAX_ROWS]
    start = min(span.start_ns for span in spans)
    end = max(max(span.end_ns, span.start_ns) for span in spans)
    scale = (_WIDTH - _LABEL - 16) / max(end - start, 1)
    height = _TOP + _ROW * len(shown) + (_ROW if len(rows) > len(shown) else 0) + 6
    parts = [
        f'<svg class="chart waterfall" viewBox="0 0 {_WIDTH} {height}" role="img" '
        f'aria-label="Trace: {len(spans)} spans" xmlns="http://www.w3.org/2000/svg">',
        _axis(end - start, height),
    ]
    for number, (depth, span, heading) in enumerate(shown):
        y = _TOP + number * _ROW
        if heading is not None:
            parts.append(f'<text class="round" x="4" y="{y + 13}">{escape(heading)}</text>')
            continue
        assert span is not None
        parts.append(_bar(span, depth, y, (span.start_ns - start) * scale, span.duration * 1e9 * scale))
    if len(rows) > len(shown):
        y = _TOP + len(shown) * _ROW
        parts.append(f'<text class="axis" x="4" y="{y + 13}">... {len(rows) - len(shown)} more rows not drawn</text>')
    return Markup("".join(parts) + "</svg>")


def _rows(spans: Sequence[Span]) -> list[tuple[int, Span | None, str | None]]:
    """`(depth, span, None)` per span in tree order, with a `(0, None, "round N")` heading per turn."""
    rounds: dict[str | None, list[Span]] = {}
    for span in spans:
        if span.parent is None:
            rounds.setdefault(span.parent_id, []).append(span)
    rows: list[tuple[int, Span | None, str | None]] = []
    for number, tops in enumerate(rounds.values(), start=1):
        if len(rounds) > 1:
            rows.append((0, None, f"round {number}"))
        for top in tops:
            rows += _subtree(top, 0)
    return rows


def _subtree(span: Span, depth: int) -> list[tuple[int, Span | None, str | None]]:
    rows: list[tuple[int, Span | None, str | None]] = [(depth, span, None)]
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


def _axis(total_ns: int, height: int) -> str:
    ticks = []
    for step in range(5):
        x = _LABEL + (_WIDTH - _LABEL - 16) * step / 4
        ms = total_ns / 1e6 * step / 4
        ticks.append(
            f'<line class="grid" x1="{x:.1f}" y1="{_TOP - 4}" x2="{x:.1f}" y2="{height - 4}"/>'
            f'<text class="axis" x="{x:.1f}" y="14" text-anchor="{"end" if step == 4 else "middle"}">{_ms(ms)}</text>'
        )
    return "".join(ticks)


def _ms(value: float) -> str:
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"
