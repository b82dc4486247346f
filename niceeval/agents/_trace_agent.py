"""A finished production trace as the agent of a run: one turn, served from the trace.

An eval that scores a trace (an online eval under `niceeval watch`, or an eval with `trace=`, a recorded one)
runs through the same runner as any eval, so its assertions, scoped assertions, span assertions and judges work
unchanged: the run's agent is the trace, and the run starts by sending the trace's input to it. The turn's events
are the trace's spans read as events (`events_from_spans`), between the user's message and the agent's reply, and
the run's spans are the trace's.
"""

from __future__ import annotations

from typing import Any

from niceeval._core.errors import UsageError
from niceeval._core.events import EventLog, MessageEvent
from niceeval.agents._protocol import AgentReply
from niceeval.tracing import Trace, events_from_spans


class TraceAgent:
    """The agent of one online run: its one session replays `trace`."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace

    async def open(self, session_id: str, log: EventLog) -> TraceSession:
        return TraceSession(self.trace, session_id, log)


class TraceSession:
    """Answers the trace's input with the trace's events and reply, once."""

    def __init__(self, trace: Trace, session_id: str, log: EventLog) -> None:
        self.id = session_id
        self._trace = trace
        self._log = log

    async def send(self, message: str, *, output: type[Any] | None = None) -> AgentReply:
        trace = self._trace
        if self._log.spans:
            raise UsageError(
                "an online eval scores one finished trace: it cannot send to the agent (t.send); "
                "read t.input, t.reply and t.trace instead"
            )
        self._log.emit(MessageEvent(role="user", text=message))
        for event in events_from_spans(trace.spans):
            self._log.emit(event)
        self._log.emit(MessageEvent(role="assistant", text=trace.reply, latency=trace.duration))
        self._log.spans.extend(trace.spans)
        return AgentReply(text=trace.reply)

    async def close(self) -> None:
        """Nothing to free."""
