"""Server-rendered SVG charts: pure functions from numbers to markup, so pages need no chart script.

Every label that reaches a chart may come from a user or a model (eval ids, assertion names), so each one is
escaped; links are kept only when they are paths on this server. Colours are CSS classes (the stylesheet
decides), except the heat map's cell fill, which is a presentation attribute computed from the score (a strict
Content-Security-Policy forbids `style=` attributes, not SVG's `fill=`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

SERIES_CLASSES = 8
"""Line charts cycle through this many CSS classes (`series-0` ... `series-7`)."""
LEGEND_COLUMNS = 2


@dataclass(frozen=True, slots=True)
class Point:
    """One x position of a line chart.

    Args:
        label: What the x position is (a run's date or id), shown in the tooltip.
        value: In [0, 1], or `None` for no value there (the line has a gap).
        href: A path on this server to open when the point is clicked.
    """

    label: str
    value: float | None
    href: str | None = None


@dataclass(frozen=True, slots=True)
class Series:
    """One named line of a multi-line chart; `values` align with the chart's x labels."""

    name: str
    values: Sequence[float | None]
    same: Sequence[str] = ()
    """Other series with exactly these values, drawn as this one line (`score_lines` merges them)."""

    @property
    def tooltip(self) -> str:
        """Every name this line stands for, one per line."""
        return "\n".join([self.name, *self.same]) + (" (the same scores)" if self.same else "")


def merge_identical(series: Sequence[Series]) -> list[Series]:
    """Series with the same values become one line naming the others: drawn apart, they would lie on top of
    each other and the chart would seem to show one line (or only the last one's colour)."""
    merged: dict[tuple[float | None, ...], Series] = {}
    for line in series:
        key = tuple(None if v is None else round(v, 6) for v in line.values)
        first = merged.get(key)
        merged[key] = line if first is None else Series(first.name, first.values, [*first.same, line.name, *line.same])
    return list(merged.values())


@dataclass(frozen=True, slots=True)
class Cell:
    """One cell of the heat map: an assertion's score in one run.

    Args:
        score: In [0, 1], or `None` when inconclusive.
        state: `passed`, `failed` or `inconclusive` (drives the tooltip and the CSS class).
        href: A path on this server to open when the cell is clicked.
    """

    score: float | None
    state: str
    href: str | None = None


@dataclass(frozen=True, slots=True)
class _Frame:
    """The plotting area inside an SVG of `width` x `height`."""

    width: int
    height: int
    left: int = 40
    right: int = 12
    top: int = 10
    bottom: int = 22

    @property
    def inner_width(self) -> int:
        return self.width - self.left - self.right

    @property
    def inner_height(self) -> int:
        return self.height - self.top - self.bottom

    def x(self, index: int, count: int) -> float:
        if count <= 1:
            return self.left + self.inner_width / 2
        return self.left + self.inner_width * index / (count - 1)

    def y(self, value: float) -> float:
        return self.top + self.inner_height * (1.0 - _clamp(value))


def trend_line(points: Sequence[Point], *, width: int = 640, height: int = 160, title: str = "Pass rate") -> Markup:
    """A line of values in [0, 1] over runs (oldest first), with a dot per run and a gap where a value is missing.

    Args:
        points: One per run, oldest first.
        width: SVG width in user units (the SVG scales to its container).
        height: SVG height in user units.
        title: Accessible name of the chart.
    """
    frame = _Frame(width, height)
    parts = [_open(width, height, title, "chart trend"), _y_axis(frame)]
    if not any(p.value is not None for p in points):
        parts.append(_empty(frame))
        return Markup("".join(parts) + "</svg>")
    values = [p.value for p in points]
    parts += [_polylines(frame, values, "line series-0")]
    for index, point in enumerate(points):
        if point.value is None:
            continue
        dot = (
            f'<circle class="dot series-0" cx="{frame.x(index, len(points)):.1f}" '
            f'cy="{frame.y(point.value):.1f}" r="3.5"><title>{escape(point.label)}: {_pct(point.value)}</title>'
            "</circle>"
        )
        parts.append(_link(dot, point.href))
    parts.append(_x_labels(frame, [p.label for p in points]))
    return Markup("".join(parts) + "</svg>")


def score_lines(
    series: Sequence[Series], labels: Sequence[str], *, width: int = 640, height: int = 200, title: str = "Scores"
) -> Markup:
    """Several lines of scores in [0, 1] over the same runs (one per assertion), with a legend below.

    Args:
        series: The lines; each has one value per label (`None` for a gap).
        labels: The x positions (runs), oldest first.
        width: SVG width in user units.
        height: Height of the plotting area plus axes; the legend adds a row per two series.
        title: Accessible name of the chart.
    """
    series = merge_identical(series)
    legend_rows = (len(series) + LEGEND_COLUMNS - 1) // LEGEND_COLUMNS
    frame = _Frame(width, height)
    total_height = height + legend_rows * 18
    parts = [_open(width, total_height, title, "chart scores"), _y_axis(frame)]
    if not series or not any(v is not None for s in series for v in s.values):
        parts.append(_empty(frame))
        return Markup("".join(parts) + "</svg>")
    for number, line in enumerate(series):
        css = f"series-{number % SERIES_CLASSES}"
        values = list(line.values)[: len(labels)]
        parts.append(f'<g class="series"><title>{escape(line.tooltip)}</title>')
        parts.append(_polylines(frame, values, f"line {css}", count=len(labels)))
        for index, value in enumerate(values):
            if value is not None:
                parts.append(
                    f'<circle class="dot {css}" cx="{frame.x(index, len(labels)):.1f}" cy="{frame.y(value):.1f}" '
                    f'r="2.5"><title>{escape(line.tooltip)} @ {escape(labels[index])}: {value:.2f}</title></circle>'
                )
        parts.append("</g>")
    parts.append(_x_labels(frame, labels))
    parts.append(_legend(series, width, height))
    return Markup("".join(parts) + "</svg>")


def heat_map(
    rows: Sequence[str],
    columns: Sequence[str],
    cells: Sequence[Sequence[Cell | None]],
    *,
    cell: int = 18,
    label_width: int = 220,
    title: str = "Assertions x runs",
) -> Markup:
    """A grid of assertion scores: one row per assertion, one column per run (oldest first).

    Args:
        rows: Row names (assertions); long names are shortened, the full name is in the tooltip.
        columns: Column names (runs), for tooltips.
        cells: `cells[row][column]`; `None` where the assertion did not run in that run.
        cell: Side of one square in user units.
        label_width: Room for the row names on the left.
        title: Accessible name of the chart.
    """
    width = label_width + max(len(columns), 1) * (cell + 2) + 8
    height = max(len(rows), 1) * (cell + 2) + 8
    parts = [_open(width, height, title, "chart heat")]
    if not rows or not columns:
        parts.append(f'<text class="empty" x="8" y="{height / 2 + 4:.0f}">no data yet</text>')
        return Markup("".join(parts) + "</svg>")
    for r, name in enumerate(rows):
        y = 4 + r * (cell + 2)
        short = name if len(name) <= 32 else name[:31] + "\u2026"
        parts.append(
            f'<text class="row-label" x="{label_width - 8}" y="{y + cell * 0.7:.1f}" text-anchor="end">'
            f"<title>{escape(name)}</title>{escape(short)}</text>"
        )
        row_cells = cells[r] if r < len(cells) else []
        for c, column in enumerate(columns):
            value = row_cells[c] if c < len(row_cells) else None
            parts.append(_heat_cell(value, label_width + c * (cell + 2), y, cell, f"{name} @ {column}"))
    return Markup("".join(parts) + "</svg>")


def score_colour(score: float) -> str:
    """A fill for a score in [0, 1]: red at 0, amber at 0.5, green at 1 (linear in between)."""
    red, amber, green = (0xD1, 0x43, 0x43), (0xE0, 0x9B, 0x2D), (0x2E, 0x9A, 0x56)
    value = _clamp(score)
    low, high, share = (red, amber, value * 2) if value < 0.5 else (amber, green, (value - 0.5) * 2)
    mixed = (round(a + (b - a) * share) for a, b in zip(low, high, strict=True))
    return "#" + "".join(f"{channel:02x}" for channel in mixed)


def _heat_cell(value: Cell | None, x: int, y: int, side: int, tip: str) -> str:
    if value is None:
        return f'<rect class="cell none" x="{x}" y="{y}" width="{side}" height="{side}" rx="3"/>'
    state = value.state if value.state in ("passed", "failed", "inconclusive") else "unknown"
    shown = "inconclusive" if value.score is None else f"{value.score:.2f} {state}"
    fill = "" if value.score is None else f' fill="{score_colour(value.score)}"'
    rect = (
        f'<rect class="cell {state}" x="{x}" y="{y}" width="{side}" height="{side}" rx="3"{fill}>'
        f"<title>{escape(tip)}: {escape(shown)}</title></rect>"
    )
    return _link(rect, value.href)


def _open(width: int, height: int, title: str, css: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{css}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>'
    )


def _y_axis(frame: _Frame) -> str:
    parts = []
    for value in (0.0, 0.5, 1.0):
        y = frame.y(value)
        parts.append(
            f'<line class="grid" x1="{frame.left}" x2="{frame.width - frame.right}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="axis" x="{frame.left - 6}" y="{y + 4:.1f}" text-anchor="end">{_pct(value)}</text>'
        )
    return "".join(parts)


def _x_labels(frame: _Frame, labels: Sequence[str]) -> str:
    if not labels:
        return ""
    y = frame.height - 6
    first = f'<text class="axis" x="{frame.left}" y="{y}" text-anchor="start">{escape(labels[0])}</text>'
    if len(labels) == 1:
        return first
    last_x = frame.width - frame.right
    return first + f'<text class="axis" x="{last_x}" y="{y}" text-anchor="end">{escape(labels[-1])}</text>'


def _polylines(frame: _Frame, values: Sequence[float | None], css: str, *, count: int | None = None) -> str:
    """One polyline per run of consecutive values: a missing value breaks the line instead of bridging it."""
    total = len(values) if count is None else count
    segments: list[list[str]] = [[]]
    for index, value in enumerate(values):
        if value is None:
            segments.append([])
        else:
            segments[-1].append(f"{frame.x(index, total):.1f},{frame.y(value):.1f}")
    return "".join(f'<polyline class="{css}" points="{" ".join(s)}"/>' for s in segments if len(s) > 1)


def _legend(series: Sequence[Series], width: int, top: int) -> str:
    parts = []
    column_width = (width - 40) / LEGEND_COLUMNS
    fits = int(column_width / 6.5) - 3  # characters of an 11px label that fit beside the swatch
    for number, line in enumerate(series):
        x = 40 + (number % LEGEND_COLUMNS) * column_width
        y = top + (number // LEGEND_COLUMNS) * 18 + 4
        more = f" (+{len(line.same)} same)" if line.same else ""
        room = max(fits - len(more), 4)
        name = (line.name if len(line.name) <= room else line.name[: room - 1] + "\u2026") + more
        parts.append(
            f'<rect class="swatch series-{number % SERIES_CLASSES}" x="{x:.0f}" y="{y}" width="10" height="10" '
            f'rx="2"/><text class="legend" x="{x + 14:.0f}" y="{y + 9}"><title>{escape(line.tooltip)}</title>'
            f"{escape(name)}</text>"
        )
    return "".join(parts)


def _empty(frame: _Frame) -> str:
    x = frame.left + frame.inner_width / 2
    y = frame.top + frame.inner_height / 2
    return f'<text class="empty" x="{x:.0f}" y="{y:.0f}" text-anchor="middle">no data yet</text>'


def _link(inner: str, href: str | None) -> str:
    """Wrap in a link only for paths on this server: stored text never becomes a `javascript:` URL."""
    if href is None or not href.startswith("/") or href.startswith("//"):
        return inner
    return f'<a href="{escape(href)}">{inner}</a>'


def _pct(value: float) -> str:
    return f"{value * 100:.0f}%"


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value))


def outcome_bar(passed: int, scored: int, failed: int, skipped: int, *, width: int = 120, height: int = 8) -> Markup:
    """A stacked bar of outcome counts (passed, scored, failed, skipped), drawn to scale."""
    total = passed + scored + failed + skipped
    label = f"{passed} passed, {scored} scored, {failed} failed, {skipped} skipped"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="outcome-bar" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" preserveAspectRatio="none" role="img" aria-label="{label}">'
        f"<title>{label}</title>"
    ]
    x = 0.0
    for css, count in (("passed", passed), ("scored", scored), ("failed", failed), ("skipped", skipped)):
        if total and count:
            share = width * count / total
            parts.append(f'<rect class="{css}" x="{x:.2f}" y="0" width="{share:.2f}" height="{height}"/>')
            x += share
    if not total:
        parts.append(f'<rect class="skipped" x="0" y="0" width="{width}" height="{height}"/>')
    return Markup("".join(parts) + "</svg>")
