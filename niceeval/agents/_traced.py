"""`traced_agent`: any instrumented agent as the agent under test, what it did read from its OpenTelemetry spans.

The agent is a function `(message)` or `(message, session)`, like a function agent. Each turn runs under the
eval run's trace: spans the agent makes in this process join it (pydantic-ai with `instrument=True`, the
OpenInference instrumentors, your own tracer), and so do spans of a subprocess or service given `session.env`
or `session.traceparent`. When the turn returns, its spans (awaited for a bounded flush window) become the
turn's events: tool calls, token usage, subagents, errors; and `t.spans` / `t.span(...)` see them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, overload

from niceeval._core.errors import UsageError
from niceeval._core.events import EventLog, MessageEvent
from niceeval.agents._function import AgentFunction, FunctionSession
from niceeval.agents._kit import Histories
from niceeval.providers import release
from niceeval.tracing._session import DEFAULT_FLUSH_WINDOW, SessionTrace, TraceOptions, session_trace


@overload
def traced_agent(fn: AgentFunction, /, *, flush_window: float = DEFAULT_FLUSH_WINDOW) -> TracedAgent: ...


@overload
def traced_agent(*, flush_window: float = DEFAULT_FLUSH_WINDOW) -> Callable[[AgentFunction], TracedAgent]: ...


def traced_agent(
    fn: AgentFunction | None = None, /, *, flush_window: float = DEFAULT_FLUSH_WINDOW
) -> TracedAgent | Callable[[AgentFunction], TracedAgent]:
    """An instrumented agent as the agent under test, its tool calls and usage read from its spans.

        @traced_agent
        async def support(message: str) -> str:
            return (await my_instrumented_agent.run(message)).output

    Spans are read by their OpenTelemetry GenAI and OpenInference attributes (never by display names):
    `execute_tool` / TOOL spans become `action.called` events, model calls `usage` events, nested agents
    `subagent.called`, failed spans `error`. A subprocess joins the run's trace with `session.env`
    (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` of niceeval's receiver, `TRACEPARENT`); a service with the
    `traceparent` header (`session.traceparent`).

    Args:
        fn: The agent function; also usable as `@traced_agent` or `@traced_agent(flush_window=...)`.
        flush_window: Seconds each turn waits at most for its spans to arrive whole (batch exporters send late).

    Raises:
        UsageError: `fn` is not callable, or `flush_window` is not a positive number.
    """
    if isinstance(flush_window, bool) or not isinstance(flush_window, int | float) or flush_window <= 0:
        raise UsageError(f"traced_agent: flush_window= is seconds, more than 0; got {flush_window!r}.")
    options = TraceOptions(flush_window=float(flush_window), listen=True)
    if fn is None:
        return lambda function: TracedAgent(function, options)
    return TracedAgent(fn, options)


class TracedAgent:
    """Opens traced sessions on an agent function; conversations are kept per session id (`t.revive()`)."""

    def __init__(self, fn: AgentFunction, options: TraceOptions) -> None:
        if not callable(fn):
            raise UsageError(f"traced_agent needs a function, got {type(fn).__name__}.")
        self.fn = fn
        self.options = options
        self._histories: Histories[list[MessageEvent]] = Histories()

    async def open(self, session_id: str, log: EventLog) -> TracedSession:
        """Start (or continue) the conversation `session_id` under a new trace of the suite's collector."""
        history = self._histories.get(session_id) or []
        self._histories.put(session_id, history)
        return TracedSession(self.fn, session_id, log, history, await session_trace(log, self.options))


class TracedSession(FunctionSession):
    """A conversation whose turns run under the eval run's trace. The function session's helpers work too."""

    def __init__(
        self, fn: AgentFunction, session_id: str, log: EventLog, history: list[MessageEvent], trace: SessionTrace
    ) -> None:
        super().__init__(fn, session_id, log, history)
        self.trace = trace

    @property
    def traceparent(self) -> str:
        """The current turn's W3C `traceparent`, for a service the agent calls (send it as that header)."""
        return self.trace.traceparent

    @property
    def env(self) -> dict[str, str]:
        """For an agent run as a subprocess: `subprocess.run(cmd, env={**os.environ, **session.env})`; its
        OpenTelemetry SDK exports to niceeval (OTLP/HTTP) and continues the turn's trace (`TRACEPARENT`)."""
        return self.trace.env

    async def _answer(self, message: str) -> Any:
        async with self.trace.turn():
            return await super()._answer(message)

    async def close(self) -> None:
        """End the trace (later spans are counted as unclaimed) and give the suite's tracing back."""
        self.trace.close()
        await release(self.trace.tracing)
