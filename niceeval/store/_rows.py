"""A `RunResult` back from its table rows (`_statements.insert_runs` writes them): every field the JSON report has
survives the round trip."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from niceeval._core.assertion import AssertionResult, JudgeCall
from niceeval._core.errors import ErrorInfo
from niceeval._core.events import EVENTS, Event
from niceeval._core.results import RunResult, SandboxRecord, Spend
from niceeval._core.spans import SpanRecord

if TYPE_CHECKING:
    from sqlalchemy import RowMapping

_JUDGE_FIELDS = [name for name in JudgeCall.model_fields]
_ASSERTION_FIELDS = [name for name in AssertionResult.model_fields if name != "judge_calls"]


def _spend(row: RowMapping, side: str) -> Spend:
    unpriced = (row["unpriced"] or {}).get(side, [])
    return Spend(
        calls=row[f"{side}_calls"],
        tokens=row[f"{side}_tokens"],
        cost=row[f"{side}_cost"],
        cached=row["judge_cached"] if side == "judge" else 0,
        unpriced=unpriced,
    )


def _aware(when: datetime) -> datetime:
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)  # SQLite keeps no zone


def from_event_rows(rows: Iterable[RowMapping]) -> list[Event]:
    """Events back from their rows (in the rows' order)."""
    return EVENTS.validate_python(
        [{**e["payload"], "seq": e["seq"], "type": e["type"], "at": _aware(e["at"])} for e in rows]
    )


def from_rows(
    row: RowMapping,
    assertion_rows: Iterable[RowMapping],
    judge_rows: Mapping[int, list[RowMapping]],
    event_rows: Iterable[RowMapping],
    span_rows: Iterable[RowMapping] = (),
) -> RunResult:
    """The `RunResult` recorded by these rows (`judge_rows` keyed by assertion id, each in position order)."""
    assertions = [
        AssertionResult(
            **{name: a[name] for name in _ASSERTION_FIELDS},
            judge_calls=[JudgeCall(**{name: j[name] for name in _JUDGE_FIELDS}) for j in judge_rows.get(a["id"], [])],
        )
        for a in assertion_rows
    ]
    events = from_event_rows(event_rows)
    return RunResult(
        eval_id=row["eval_id"],
        file=row["file"],
        line=row["line"],
        run_index=row["run_index"],
        outcome=row["outcome"],
        duration_s=row["duration_s"],
        error=ErrorInfo.model_validate(row["error"]) if row["error"] else None,
        skip_reason=row["skip_reason"],
        assertions=assertions,
        events=events,
        sandbox_path=row["sandbox_path"],
        workspace_diff=row["workspace_diff"],
        agent_spend=_spend(row, "agent"),
        judge_spend=_spend(row, "judge"),
        case_id=row["case_id"],
        variant=row["variant"],
        points=row["points"],
        points_possible=row["points_possible"],
        failure=row.get("failure_class"),
        attempts=row.get("attempts") or 1,
        identity=row["identity"],
        provenance=row["provenance"],
        carried_from=row["carried_from"],
        carried_index=row["carried_index"],
        warnings=row.get("warnings") or [],
        spans=[SpanRecord.model_validate(span["payload"]) for span in span_rows],
        sandbox=SandboxRecord.model_validate(row["sandbox"]) if row["sandbox"] else None,
    )
