"""A `RunResult` as table rows, and back: every field the JSON report has survives the round trip."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import RowMapping

from niceeval._core.assertion import AssertionResult, JudgeCall
from niceeval._core.errors import ErrorInfo
from niceeval._core.events import EVENTS, Event, MessageEvent
from niceeval._core.redact import scrub_run
from niceeval._core.results import RunResult, Spend
from niceeval._core.spans import SpanRecord

_EVENT_HEAD = {"seq", "type", "at"}
_JUDGE_FIELDS = [name for name in JudgeCall.model_fields]
_ASSERTION_FIELDS = [name for name in AssertionResult.model_fields if name != "judge_calls"]


@dataclass(kw_only=True, slots=True)
class RunRows:
    """The rows of one eval run; children point at their parent by position until ids are known."""

    eval_run: dict[str, Any]
    assertions: list[dict[str, Any]] = field(default_factory=list)
    judge_calls: list[list[dict[str, Any]]] = field(default_factory=list)
    """Per assertion (same order), its judge calls."""
    events: list[dict[str, Any]] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    spans: list[dict[str, Any]] = field(default_factory=list)


def _tokens(events: Sequence[Event]) -> tuple[int, int, int]:
    usage = [e for e in events if e.type == "usage"]
    return (
        sum(e.input_tokens for e in usage),
        sum(e.output_tokens for e in usage),
        sum(e.cache_read_tokens for e in usage),
    )


def to_rows(suite_run_id: str, result: RunResult) -> RunRows:
    """The rows that record `result` in suite run `suite_run_id` (secrets scrubbed first, lone surrogates made
    U+FFFD as in the JSON report: a run's odd text never makes it, or the runs written with it, unstorable)."""
    result = scrub_run(result, surrogates=True)
    input_tokens, output_tokens, cache_read = _tokens(result.events)
    agent, judge = result.agent_spend, result.judge_spend
    rows = RunRows(
        eval_run={
            "suite_run_id": suite_run_id,
            "eval_id": result.eval_id,
            "run_index": result.run_index,
            "file": result.file,
            "line": result.line,
            "outcome": result.outcome,
            "finished_at": datetime.now(UTC),
            "duration_s": result.duration_s,
            "error": result.error.model_dump() if result.error else None,
            "skip_reason": result.skip_reason,
            "sandbox_path": result.sandbox_path,
            "workspace_diff": result.workspace_diff,
            "agent_calls": agent.calls,
            "agent_tokens": agent.tokens,
            "agent_cost": agent.cost,
            "judge_calls": judge.calls,
            "judge_tokens": judge.tokens,
            "judge_cost": judge.cost,
            "judge_cached": judge.cached,
            "unpriced": {"agent": agent.unpriced, "judge": judge.unpriced} if agent.unpriced + judge.unpriced else None,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_read_tokens": cache_read,
            "case_id": result.case_id,
            "variant": result.variant,
        }
    )
    for position, assertion in enumerate(result.assertions):
        rows.assertions.append({"position": position, **assertion.model_dump(include=set(_ASSERTION_FIELDS))})
        rows.judge_calls.append(
            [{"position": i, **call.model_dump(mode="json")} for i, call in enumerate(assertion.judge_calls)]
        )
    for event in result.events:
        payload = event.model_dump(mode="json", exclude=_EVENT_HEAD, fallback=repr)  # agents may put anything in data
        rows.events.append({"seq": event.seq, "type": event.type, "at": event.at, "payload": payload})
    rows.turns = turns_of(result.events)
    rows.spans = [{"position": i, "payload": span.model_dump(mode="json")} for i, span in enumerate(result.spans)]
    return rows


def turns_of(events: Sequence[Event]) -> list[dict[str, Any]]:
    """The exchanges with the agent: each user message, the last assistant reply before the next one."""
    turns: list[dict[str, Any]] = []
    for event in events:
        if not isinstance(event, MessageEvent) or event.role == "system":
            continue
        if event.role == "user":
            turns.append(
                {"position": len(turns), "sent": event.text, "reply": None, "data": None,
                 "first_seq": event.seq, "last_seq": event.seq}
            )  # fmt: skip
        elif turns:
            turns[-1].update(reply=event.text, data=_plain(event.data), last_seq=event.seq)
    if turns:  # a turn spans every event up to the next user message (tool calls, usage after the reply)
        ends = [t["first_seq"] - 1 for t in turns[1:]] + [events[-1].seq]
        for turn, end in zip(turns, ends, strict=True):
            turn["last_seq"] = max(turn["last_seq"], end)
    return turns


def _plain(value: Any) -> Any:
    return MessageEvent(role="assistant", text="", data=value).model_dump(mode="json", fallback=repr)["data"]


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
        spans=[SpanRecord.model_validate(span["payload"]) for span in span_rows],
    )
