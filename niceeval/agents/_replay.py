"""The replaying agent behind `niceeval rescore`: every turn served from a recorded conversation, none sent live.

The runner gives it the recorded turns of one eval run as plain data (`RecordedTurn`); the agents layer never
reads the results store. A message the record does not have at that point is a `ReplayMiss`, which fails the run
with the message in it: a rescore never falls back to the live agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from niceeval._core.events import ErrorEvent, Event, EventLog
from niceeval.agents._function import structure
from niceeval.agents._protocol import AgentReply


class ReplayMiss(Exception):
    """The eval sent a message the recorded conversation does not have at that point."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RecordedTurn:
    """One recorded exchange: what was sent, what came back, and the events the agent emitted meanwhile."""

    sent: str
    reply: str | None
    """None when the agent gave no reply (it raised)."""
    data: Any = None
    events: tuple[Event, ...] = ()
    """In order, the user message first, as the live agent emitted them."""


@dataclass(kw_only=True, slots=True)
class ReplayAgent:
    """Serves one eval run's recorded turns in order, across sessions (`t.revive`, `t.new_session`)."""

    turns: Sequence[RecordedTurn]
    _next: int = field(default=0)

    async def open(self, session_id: str, log: EventLog) -> ReplaySession:
        return ReplaySession(self, session_id, log)

    def take(self, message: str) -> RecordedTurn:
        """The next recorded turn, which must have sent `message`."""
        position = self._next
        if position >= len(self.turns):
            raise ReplayMiss(
                f"replay miss: the eval sent {message!r} as turn {position + 1}, but the record has only "
                f"{len(self.turns)} turns; rerun the eval (niceeval run) to record the new conversation."
            )
        turn = self.turns[position]
        if turn.sent != message:
            raise ReplayMiss(
                f"replay miss: the eval sent {message!r} as turn {position + 1}, but the record sent "
                f"{turn.sent!r}; rerun the eval (niceeval run) to record the new conversation."
            )
        self._next += 1
        return turn


class ReplaySession:
    """A session of the replaying agent: `send` emits the recorded events and returns the recorded reply."""

    def __init__(self, agent: ReplayAgent, session_id: str, log: EventLog) -> None:
        self.id = session_id
        self._agent = agent
        self._log = log

    async def send(self, message: str, *, output: type[Any] | None = None) -> AgentReply:
        turn = self._agent.take(message)
        failure = turn.events[-1] if turn.reply is None and turn.events else None
        for event in turn.events:
            if event is not failure or not isinstance(failure, ErrorEvent):
                self._log.emit(event.model_copy())
        if turn.reply is None:
            reason = failure.message if isinstance(failure, ErrorEvent) else "the recorded turn has no reply"
            raise RuntimeError(f"the recorded agent failed on this turn: {reason}")
        return structure(AgentReply(text=turn.reply, data=turn.data), output, self._log)

    async def close(self) -> None:
        """Nothing to free."""
