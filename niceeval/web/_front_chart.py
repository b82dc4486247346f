"""Pass rate against cost per eval run, one point per setup with both 95% intervals as whiskers, the Pareto front
filled: server-rendered SVG, every label escaped (setup names come from users)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from niceeval.store import Measured

_Scale = Callable[[float], float]
WIDTH, HEIGHT = 640, 300
LEFT, RIGHT, TOP, BOTTOM = 56, 150, 16, 40


@dataclass(frozen=True, slots=True)
class FrontPoint:
    """One setup as the chart draws it."""

    name: str
    pass_rate: Measured
    cost: Measured
    on_front: bool


def front_chart(points: Sequence[FrontPoint]) -> Markup:
    """The chart, or nothing when fewer than two setups have both a pass rate and a cost."""
    drawn = [p for p in points if p.pass_rate.value is not None and p.cost.value is not None]
    if len(drawn) < 2:
        return Markup("")
    costs = [v for p in drawn for v in (p.cost.value, p.cost.low, p.cost.high) if v is not None]
    low, high = min(costs), max(costs)
    pad = (high - low) * 0.08 or high * 0.1 or 1.0
    x_min, x_max = max(0.0, low - pad), high + pad
    width, height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(value: float) -> float:
        return LEFT + (value - x_min) / (x_max - x_min) * width

    def y(value: float) -> float:
        return TOP + (1 - value) * height

    parts = [_axes(x_min, x_max, x, y)]
    parts += [_point(p, x, y) for p in drawn]
    label = "Pass rate against cost per eval run, each with its 95% interval; filled: the Pareto front"
    svg = (
        f'<svg class="chart front-chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{label}">'
        + "".join(parts)
        + "</svg>"
    )
    return Markup(svg)  # every label inside is escaped


def _axes(x_min: float, x_max: float, x: _Scale, y: _Scale) -> str:
    lines = [f'<line class="frame" x1="{LEFT}" y1="{y(0):.1f}" x2="{WIDTH - RIGHT}" y2="{y(0):.1f}"/>']
    for rate in (0.0, 0.5, 1.0):
        lines.append(f'<line class="grid" x1="{LEFT}" y1="{y(rate):.1f}" x2="{WIDTH - RIGHT}" y2="{y(rate):.1f}"/>')
        lines.append(f'<text class="tick" x="{LEFT - 6}" y="{y(rate) + 4:.1f}" text-anchor="end">{rate:.0%}</text>')
    for value in (x_min, (x_min + x_max) / 2, x_max):
        lines.append(f'<text class="tick" x="{x(value):.1f}" y="{HEIGHT - BOTTOM + 16}" '
                     f'text-anchor="middle">{escape(_usd(value))}</text>')  # fmt: skip
    lines.append(f'<text class="axis-label" x="{LEFT + (WIDTH - LEFT - RIGHT) / 2:.1f}" y="{HEIGHT - 6}" '
                 'text-anchor="middle">cost per eval run</text>')  # fmt: skip
    return "".join(lines)


def _point(point: FrontPoint, x: _Scale, y: _Scale) -> str:
    rate, cost = point.pass_rate, point.cost
    assert rate.value is not None and cost.value is not None
    cx, cy = x(cost.value), y(rate.value)
    marks = []
    if rate.low is not None and rate.high is not None:
        marks.append(f'<line class="whisker" x1="{cx:.1f}" y1="{y(rate.low):.1f}" x2="{cx:.1f}" '
                     f'y2="{y(rate.high):.1f}"/>')  # fmt: skip
    if cost.low is not None and cost.high is not None:
        marks.append(f'<line class="whisker" x1="{x(cost.low):.1f}" y1="{cy:.1f}" x2="{x(cost.high):.1f}" '
                     f'y2="{cy:.1f}"/>')  # fmt: skip
    kind = "front" if point.on_front else "beaten"
    name = escape(point.name)
    tooltip = escape(f"{point.name}: pass rate {rate.shown}; cost {cost.shown}")
    marks.append(f'<circle class="setup {kind}" cx="{cx:.1f}" cy="{cy:.1f}" r="5"><title>{tooltip}</title></circle>')
    marks.append(f'<text class="setup-label" x="{cx + 8:.1f}" y="{cy - 6:.1f}">{name}</text>')
    return f'<g class="setup-point" data-setup="{name}">' + "".join(marks) + "</g>"


def _usd(value: float) -> str:
    return f"${value:.2g}" if value < 1 else f"${value:,.2f}"
