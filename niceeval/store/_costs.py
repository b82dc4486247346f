"""What a change costs, read from two stored suite runs: the agent's cost per eval run and per passed run, and
p50/p95 turn latency, each with the paired bootstrap interval of its change (`niceeval.stats.compare_usage`),
and the `--max-cost-increase` / `--max-latency-increase` gates.

The cost is the agent's: judge spend is the evaluation's own overhead, and the judge cache makes it differ
between two runs of the same agent. A turn's latency is the `latency` niceeval stored on the reply's message
event (`events.latency`). A gate fails when the low end of the increase's 95% interval is above the limit: the
increase is past the limit beyond noise (docs/ci.md says why the gate reads the interval, not the point estimate).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from sqlalchemy import Connection, select

from niceeval.stats import Dimension, PairedChange, UsageColumns, UsageComparison
from niceeval.store._driver import session_of
from niceeval.store._kept_sums import kept_usage
from niceeval.store._models import UsageChange
from niceeval.store._records import slot_records
from niceeval.store._schema import events


@dataclass(frozen=True, kw_only=True)
class UsageLimits:
    """The gates on cost and latency, as fractions (0.1: 10%); None: no gate."""

    max_cost_increase: float | None = None
    max_latency_increase: float | None = None


@dataclass(frozen=True, kw_only=True)
class WeighedUsage:
    """The cost and latency of two runs compared: the changes, why some are missing, the gates' reasons to fail,
    and the measures for the verdict."""

    changes: list[UsageChange]
    notes: list[str]
    reasons: list[str]
    dimensions: list[Dimension]


_RUNS = (
    "SELECT eval_id, count(*), sum(CASE WHEN outcome IN ({passing}) THEN 1 ELSE 0 END), "
    "CASE WHEN count(agent_cost) = count(*) THEN sum(agent_cost) END "
    "FROM eval_runs WHERE suite_run_id = ? AND outcome != 'skipped' GROUP BY eval_id"
)
"""Each eval's counted runs, passed runs and the agent's cost summed in SQL (None when a run's model had no price),
read by the driver's cursor: 100,000 rows without a result object each."""
_PASSING = {True: "'passed'", False: "'passed', 'scored'"}


def case_usage(conn: Connection, suite_run_id: str, *, strict: bool) -> UsageColumns:
    """Each eval's counted runs, passed runs (by the verdict rule), the agent's cost and its turns' latencies, as
    columns (no object per eval): the sums kept when the suite run closed (`_kept_sums`), else summed now."""
    totals = kept_usage(conn, suite_run_id, strict=strict)
    if totals is None:
        totals = session_of(conn).execute(_RUNS.format(passing=_PASSING[strict]), (suite_run_id,)).fetchall()
    slots = slot_records(suite_run_id)  # a carried attempt's turns are on the row it carries
    turns = (
        select(slots.c.eval_id, events.c.latency)
        .join(events, events.c.eval_run_id == slots.c.record_id)
        .where(slots.c.outcome != "skipped", events.c.latency.is_not(None))
    )  # read from the partial index of timed replies: a suite without latencies finds it empty
    latencies: dict[str, list[float]] = {}
    for eval_id, seconds in conn.execute(turns).all():
        latencies.setdefault(eval_id, []).append(float(seconds))
    cases, runs, passed, cost = zip(*totals, strict=True) if totals else ((), (), (), ())
    return UsageColumns(cases=cases, runs=runs, passed=passed, cost=cost, latencies=latencies)


def weigh_usage(
    before: UsageColumns,
    after: UsageColumns,
    *,
    clusters: Mapping[str, Hashable] | None,
    limits: UsageLimits,
) -> WeighedUsage:
    """Compare the shared evals' cost and latency, and apply the limits."""
    from niceeval.stats import compare_usage

    compared = compare_usage(before, after, clusters=clusters)
    measured = [
        (measure, unit, change)
        for measure, unit, change in (
            ("cost per eval run", "usd", compared.cost_per_run),
            ("cost per passed run", "usd", compared.cost_per_pass),
            ("p50 latency", "s", compared.latency_p50),
            ("p95 latency", "s", compared.latency_p95),
        )
        if change is not None
    ]
    changes = [_change(measure, unit, change) for measure, unit, change in measured]
    by_measure: dict[str, UsageChange] = {c.measure: c for c in changes}
    reasons = _cost_reasons(by_measure, compared, limits) + _latency_reasons(by_measure, compared, limits)
    dimensions = [_dimension(c, _VERDICT_NAMES[c.measure]) for c in changes if c.measure in _VERDICT_NAMES]
    return WeighedUsage(changes=changes, notes=list(compared.notes), reasons=reasons, dimensions=dimensions)


_VERDICT_NAMES = {"cost per eval run": "cost", "p50 latency": "p50 latency", "p95 latency": "p95 latency"}
"""The measures the verdict weighs, by the name it gives them (cost per passed run mixes in the pass rate, which
the verdict weighs on its own)."""


def _dimension(change: UsageChange, name: str) -> Dimension:
    shown = change.evidence.replace(" (95% CI ", ", 95% CI ", 1).removesuffix(")")  # `+100%, 95% CI +90% to +110%`
    return Dimension(name=name, low=change.low, high=change.high, worse_when="up", shown=shown)


def _change(measure: str, unit: str, change: PairedChange) -> UsageChange:
    built = UsageChange.model_validate(
        {
            "measure": measure, "unit": unit, "cases": change.clusters, "base": change.before, "head": change.after,
            "difference": change.difference, "low": change.low, "high": change.high, "relative": change.relative,
            "relative_low": change.relative_low, "relative_high": change.relative_high, "note": change.note,
            "change": "noise", "evidence": _evidence(change, unit),
            "base_text": amount(change.before, unit, sign=False), "head_text": amount(change.after, unit, sign=False),
            "method": change.method,
        }
    )  # fmt: skip
    return built.model_copy(update={"change": _dimension(built, measure).direction})


def _evidence(change: PairedChange, unit: str) -> str:
    """`+100% (95% CI +90% to +110%)`; in `unit` when there is no relative change (a base of 0)."""
    if change.relative is not None:
        text = _percent(change.relative)
        if change.relative_low is not None and change.relative_high is not None:
            return f"{text} (95% CI {_percent(change.relative_low)} to {_percent(change.relative_high)})"
    else:
        text = amount(change.difference, unit)
        if change.low is not None and change.high is not None:
            return f"{text} (95% CI {amount(change.low, unit)} to {amount(change.high, unit)})"
    return f"{text} ({change.note or 'no interval'})"


def _cost_reasons(by_measure: dict[str, UsageChange], compared: UsageComparison, limits: UsageLimits) -> list[str]:
    limit = limits.max_cost_increase
    if limit is None:
        return []
    cost = by_measure.get("cost per eval run")
    if cost is not None:
        return _past(cost, limit, "--max-cost-increase")
    if not compared.unpriced:  # the agent spent nothing on either side: no increase
        return []
    why = next(n for n in compared.notes if n.startswith("cost not compared"))
    return [f"--max-cost-increase {_percent(limit, signed=False)}: {why}"]


def _latency_reasons(by_measure: dict[str, UsageChange], compared: UsageComparison, limits: UsageLimits) -> list[str]:
    limit = limits.max_latency_increase
    if limit is None:
        return []
    found = [by_measure[m] for m in ("p50 latency", "p95 latency") if m in by_measure]
    if not found:
        why = next((n for n in compared.notes if "latency" in n), "no latency measured")
        return [f"--max-latency-increase {_percent(limit, signed=False)}: {why}"]
    return [reason for change in found for reason in _past(change, limit, "--max-latency-increase")]


def _past(change: UsageChange, limit: float, flag: str) -> list[str]:
    """The reason to fail when the increase is past `limit` even at its interval's low end (with no interval, one
    shared case, the measured increase itself)."""
    bounded = change.relative_low is not None or (change.relative is None and change.low is not None)
    if change.relative_low is not None:
        low_end = change.relative_low
    elif change.relative is not None:
        low_end = change.relative
    else:  # from nothing to something: past any limit once it rose
        rise = change.low if change.low is not None else change.difference
        low_end = math.inf if rise is not None and rise > 0 else 0.0
    if low_end <= limit + 1e-12:
        return []
    where = "even at the interval's low end" if bounded else "as measured (there is no interval)"
    return [f"{change.measure} rose {change.evidence}, more than {flag} {_percent(limit, signed=False)} {where}"]


def _percent(value: float, *, signed: bool = True) -> str:
    return f"{value * 100:{'+' if signed else ''}.0f}%"


def amount(value: float | None, unit: str, *, sign: bool = True) -> str:
    if value is None:
        return "n/a"
    shown = "+" if sign and value > 0 else "-" if value < 0 else ""
    return shown + (_seconds(abs(value)) if unit == "s" else _usd(abs(value)))


def _usd(value: float) -> str:
    """Dollars with two significant digits under $1 (`$0.0012`, `$0.000034`) and cents from $1 up: per-run costs
    are small, and a fixed four decimals would show a cheap model's as $0.0000."""
    if value == 0:
        return "$0"
    if value >= 1:
        return f"${value:,.2f}"
    places = max(4, 1 - math.floor(math.log10(value)))
    return f"${value:.{places}f}"


def _seconds(value: float) -> str:
    return f"{value:.2f}s" if value >= 0.1 else f"{value * 1000:.1f}ms"
